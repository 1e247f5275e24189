"""Triton kernels compiled for sm_90 (an H100/H200) by the ptxas Triton ships, no GPU needed: what Triton's
interpreter cannot show (the kernel's lowering, bf16 casts, register and shared-memory limits)."""

import pytest


def compile_for_sm90(kernel, types: list[str], constants: dict, **options):
    """`kernel` compiled with these argument types and constexprs; the test skips where Triton has no CUDA
    backend."""
    triton = pytest.importorskip("triton")
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    signature = {**dict(zip(kernel.arg_names, types)), **{name: "constexpr" for name in constants}}
    source = ASTSource(fn=kernel, signature=signature,
                       constexprs={(kernel.arg_names.index(k),): v for k, v in constants.items()})
    try:
        compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32), options=options)
    except (ImportError, RuntimeError) as e:
        if "ptxas" in str(e) or "backend" in str(e).lower():
            pytest.skip(f"no CUDA backend in this Triton: {e}")
        raise
    assert compiled.asm["cubin"] and ".target sm_90" in compiled.asm["ptx"]
    return compiled
