#!/bin/sh
# The part of the official postgres image's entrypoint that deploy/compose.yaml relies on, for an image made from
# Debian's postgresql package (official images cannot be pulled on the test machines): on an empty data directory,
# initialise a cluster owned by POSTGRES_USER with POSTGRES_PASSWORD and create POSTGRES_DB; then run the server
# in the foreground, listening on every address of the container, password authentication over TCP.
set -eu
: "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}" "${PGDATA:=/var/lib/postgresql/data}"
: "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set}"
export PGDATA
install -d -o postgres -g postgres -m 0700 "$PGDATA"
chown postgres:postgres "$PGDATA"
install -d -o postgres -g postgres -m 2775 /run/postgresql
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"; }

if [ ! -s "$PGDATA/PG_VERSION" ]; then
    password_file=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" > "$password_file"
    chown postgres "$password_file"
    as_postgres initdb --username="$POSTGRES_USER" --pwfile="$password_file" --auth-local=trust \
        --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >/dev/null
    rm -f "$password_file"
    printf "listen_addresses = '*'\n" >> "$PGDATA/postgresql.conf"
    printf 'host all all all scram-sha-256\n' >> "$PGDATA/pg_hba.conf"
    if [ "$POSTGRES_DB" != postgres ]; then
        # A server on the socket only while the database is made, as the official image does.
        as_postgres pg_ctl -w -o "-c listen_addresses=''" start >/dev/null
        as_postgres psql -v ON_ERROR_STOP=1 --username="$POSTGRES_USER" --dbname=postgres -q \
            -c "CREATE DATABASE \"$POSTGRES_DB\""
        as_postgres pg_ctl -w -m fast stop >/dev/null
    fi
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups -- postgres "$@"
