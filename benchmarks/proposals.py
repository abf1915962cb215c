"""The proposals every benchmark sends: the seed's attention case first, then a breakdown, a fleet, hand asm, and
three heavier ones as teams send them: a MoE collective on a measured barrier with a breakdown, a fleet on a fixed
job and a range of k; a decode kernel with ranges of p and k, a breakdown, a fleet, a latency SLO and a throughput
goal; a vendor-specific GEMM on two architectures over a fleet mix. The HTTP and in-process cases send the first."""

PROPOSALS = [
    b'{"target":"attention_softmax","p":0.21,"k":10,"baseline_ms":100,"cost_weeks":3}',
    b'{"target":"gemm_qkv","p":0.34,"k":10,"baseline_ms":100,"cost_weeks":4,"scope":{"workload":"inference",'
    b'"measured":"step","method":"timeline"},"breakdown":[{"name":"gemm_qkv","ms":34},{"name":"attention_softmax",'
    b'"ms":21},{"name":"matmul_out","ms":12},{"name":"layernorm","ms":6},{"name":"elementwise_gelu","ms":4},'
    b'{"name":"H2D copy","ms":18,"kind":"copy"},{"name":"host gaps","ms":5,"kind":"host"}]}',
    b'{"target":"x","p":0.05,"k":2,"cost_weeks":3,"flags":{"fleet_gpus":20000,"latency_slo":{"tail_risk":true}}}',
    b'{"target":"asm_kernel","p":0.03,"k":1.5,"cost_weeks":3,"flags":{"portability":"hand_asm"}}',
    b'{"title":"Fuse the MoE dispatch all-to-all","target":"all_to_all_dispatch","p":0.18,"k":{"low":1.6,"high":2.4},'
    b'"baseline_ms":412,"cost_weeks":6,"scope":{"workload":"pretraining","model":"moe-64e","measured":"step",'
    b'"method":"timeline","timing":"device_events"},"breakdown":[{"name":"all_to_all_dispatch","ms":74,"kind":"comm"},'
    b'{"name":"expert_gemm","ms":158},{"name":"attention_fwd_bwd","ms":96},{"name":"optimizer_step","ms":31},'
    b'{"name":"data loader wait","ms":22,"kind":"input"},{"name":"host gaps","ms":19,"kind":"host"},'
    b'{"name":"allreduce_grads","ms":12,"kind":"comm"}],"flags":{"fleet_gpus":2048,"run_days":45,"barrier":{"ranks":256,'
    b'"wait_fraction":0.06,"straggler":17,"step_ms":412,"target_ms":74,"rank_p":0.17}}}',
    b'{"title":"Triton flash-decode for long prompts","target":"attention_decode","p":{"low":0.22,"high":0.31},'
    b'"k":{"low":1.8,"high":2.5},"baseline_ms":38,"cost_weeks":4,"scope":{"workload":"inference","model":"llama-70b",'
    b'"input":"batch 16, 8k","dtype":"bf16","device":"H100","measured":"step","method":"timeline"},"breakdown":['
    b'{"name":"attention_decode","ms":10},{"name":"mlp_gemm","ms":14},{"name":"qkv_proj","ms":5},{"name":"sampling",'
    b'"ms":2,"kind":"cpu"},{"name":"kv cache copy","ms":4,"kind":"copy"},{"name":"host launch gaps","ms":3,'
    b'"kind":"host"}],'
    b'"flags":{"fleet_gpus":6000,"portability":"portable","latency_slo":{"p99_ms":120}},"goal":{"throughput_per_s":2400,'
    b'"requests_per_step":16}}',
    b'{"title":"Hand-tuned ROCm GEMM for the ranking tower","target":"tower_gemm","p":0.41,"k":1.35,"baseline_ms":9.5,'
    b'"cost_weeks":5,"scope":{"workload":"ranking","measured":"step","method":"timeline","device":"MI300X"},"breakdown":['
    b'{"name":"tower_gemm","ms":3.9},{"name":"embedding_lookup","ms":2.6},{"name":"feature H2D","ms":1.8,'
    b'"kind":"copy"},'
    b'{"name":"allocator","ms":0.6,"kind":"alloc"},{"name":"rest of the recording","ms":0.6,"kind":"other"}],'
    b'"flags":{"fleet_gpus":1200,"portability":"vendor_specific","architectures":2,"fleet_mix":[{"name":"MI300X",'
    b'"gpus":800},{"name":"H100","gpus":400,"k":1.1}]}}',
]
