"""The proposals every benchmark sends: the seed's attention case first, then a breakdown, a fleet, hand asm."""

PROPOSALS = [
    b'{"target":"attention_softmax","p":0.21,"k":10,"baseline_ms":100,"cost_weeks":3}',
    b'{"target":"gemm_qkv","p":0.34,"k":10,"baseline_ms":100,"cost_weeks":4,"scope":{"workload":"inference",'
    b'"measured":"step","method":"timeline"},"breakdown":[{"name":"gemm_qkv","ms":34},{"name":"attention_softmax",'
    b'"ms":21},{"name":"matmul_out","ms":12},{"name":"layernorm","ms":6},{"name":"elementwise_gelu","ms":4},'
    b'{"name":"H2D copy","ms":18,"kind":"copy"},{"name":"host gaps","ms":5,"kind":"host"}]}',
    b'{"target":"x","p":0.05,"k":2,"cost_weeks":3,"flags":{"fleet_gpus":20000,"latency_slo":{"tail_risk":true}}}',
    b'{"target":"asm_kernel","p":0.03,"k":1.5,"cost_weeks":3,"flags":{"portability":"hand_asm"}}',
]
