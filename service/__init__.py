"""worthit's service layer: the HTTP app, persistence and the command line. It calls `rules/`, never the reverse."""
