"""Build the seed's Part 2 run as rocprofv3 output: a kernel trace, a memory-copy trace and HIP API stats.

The figures are the seed's ("amdahl-exercise-solution", Part 2): one 44,242 ns kernel inside 3,606,501 ns
of device activity (kernel + copies, no overlap) → p = 44242 / 3606501 = 1.2267 % of device activity; a
316 ms captured run → 0.0140 % of the run; HIP API time dominated by hipMemcpy (62.6 %) and hipMalloc
(22.0 %) → 84.6 % allocation and host↔device copy.

Run ``python tests/data/profiles/make_seed_part2.py`` to rewrite the files in ``seed_part2/``; tests
call `build()` and check the committed files still match it.
"""

from __future__ import annotations

from pathlib import Path

KERNEL_NAME = "vector_add_kernel(float const*, float const*, float*, int)"
KERNEL_NS = 44_242
DEVICE_BUSY_NS = 3_606_501
WALL_NS = 316_000_000
T0 = 1_732_000_000_000_000
# Copies: two H2D and one D2H, 3,562,259 ns in all, none overlapping each other or the kernel.
H2D_NS = (1_400_000, 1_400_000)
D2H_NS = 762_259
API_TOTAL_NS = 316_000_000
API_ROWS: tuple[tuple[str, int, int], ...] = (  # name, calls, total ns (sums to API_TOTAL_NS)
    ("hipMemcpy", 3, 197_816_000),  # 62.6 %
    ("hipMalloc", 3, 69_520_000),  # 22.0 %
    ("hipGetDeviceCount", 1, 30_000_000),
    ("hipDeviceSynchronize", 1, 9_600_000),
    ("hipStreamSynchronize", 3, 9_000_000),
    ("hipLaunchKernel", 1, 64_000),
)

KERNEL_HEADER = (
    '"Kind","Agent_Id","Queue_Id","Stream_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name",'
    '"Correlation_Id","Start_Timestamp","End_Timestamp","LDS_Block_Size","Scratch_Size","VGPR_Count",'
    '"Accum_VGPR_Count","SGPR_Count","Workgroup_Size_X","Workgroup_Size_Y","Workgroup_Size_Z",'
    '"Grid_Size_X","Grid_Size_Y","Grid_Size_Z"'
)
COPY_HEADER = (
    '"Kind","Direction","Source_Agent_Id","Destination_Agent_Id","Correlation_Id","Start_Timestamp","End_Timestamp"'
)
STATS_HEADER = '"Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev"'


def build() -> dict[str, bytes]:
    """File name → contents of the three files of the run."""
    h2d_1 = (T0, T0 + H2D_NS[0])
    h2d_2 = (T0 + 150_000_000, T0 + 150_000_000 + H2D_NS[1])
    kernel = (T0 + 200_000_000, T0 + 200_000_000 + KERNEL_NS)
    d2h = (T0 + WALL_NS - D2H_NS, T0 + WALL_NS)
    kernel_csv = [
        KERNEL_HEADER,
        f'"KERNEL_DISPATCH",1,1,0,4242,1,7,"{KERNEL_NAME}",12,{kernel[0]},{kernel[1]},0,0,8,0,16,256,1,1,1048576,1,1',
    ]
    copy_csv = [
        COPY_HEADER,
        f'"MEMORY_COPY","MEMORY_COPY_HOST_TO_DEVICE",0,1,9,{h2d_1[0]},{h2d_1[1]}',
        f'"MEMORY_COPY","MEMORY_COPY_HOST_TO_DEVICE",0,1,10,{h2d_2[0]},{h2d_2[1]}',
        f'"MEMORY_COPY","MEMORY_COPY_DEVICE_TO_HOST",1,0,14,{d2h[0]},{d2h[1]}',
    ]
    stats_csv = [STATS_HEADER]
    for name, calls, total in API_ROWS:
        avg = total / calls
        pct = 100 * total / API_TOTAL_NS
        stats_csv.append(f'"{name}",{calls},{total},{avg:.6f},{pct:.4f},{int(avg * 0.9)},{int(avg * 1.1)},0.0')
    return {
        "kernel_trace.csv": ("\n".join(kernel_csv) + "\n").encode(),
        "memory_copy_trace.csv": ("\n".join(copy_csv) + "\n").encode(),
        "hip_api_stats.csv": ("\n".join(stats_csv) + "\n").encode(),
    }


def main() -> None:
    """Write the files next to this script, in ``seed_part2/``."""
    out = Path(__file__).resolve().parent / "seed_part2"
    out.mkdir(exist_ok=True)
    for name, data in build().items():
        (out / name).write_bytes(data)


if __name__ == "__main__":
    main()
