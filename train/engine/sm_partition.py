"""The card's multiprocessors split in two, a CUDA stream on each part (CUDA green contexts).

    part = partitioned_streams(48)          # part.first, part.second: a torch.cuda.ExternalStream on each part
    with torch.cuda.stream(part.first):
        graph.replay()                      # runs on its 48 multiprocessors only (part.sms: what each got)

Beside the judge's and the update's large kernels, a decode step (some 600 small kernels one after
another) waits for free multiprocessors at each of its kernels: on an H100 the overlapped decode ran at
a third of its speed alone (docs/training.md). Stream priorities do not help, since a running block is
never preempted; cuBLAS's SM carveout reaches only cuBLAS's own products. A green context owns its
multiprocessors: work on its streams runs there and nowhere else, and work on the other part's streams
cannot take them. The memory is the device's, shared with the primary context, so tensors need no copy.

The split comes from the driver (`cuDevSmResourceSplitByCount`), which rounds to its granularity (8
multiprocessors on Hopper); `SmPartition.sms` says what each part got. Needs the driver API's Python
bindings (the `cuda-bindings` package) and a driver of CUDA 12.4 or later.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


class PartitionError(RuntimeError):
    """The card or its driver cannot split its multiprocessors (the message says why)."""


def _check(result):
    """cuda.bindings returns (CUresult, *values): the values, or a PartitionError naming the failure."""
    from cuda.bindings import driver

    err, *values = result if isinstance(result, tuple) else (result,)
    if err != driver.CUresult.CUDA_SUCCESS:
        name = driver.cuGetErrorName(err)[1]
        raise PartitionError(f"CUDA driver: {name.decode() if isinstance(name, bytes) else name}")
    return values[0] if len(values) == 1 else values


@dataclass
class SmPartition:
    """Two green contexts on one device and a stream on each: `first` holds `sms[0]` multiprocessors,
    `second` the rest (`sms[1]`)."""

    first: torch.cuda.ExternalStream
    second: torch.cuda.ExternalStream
    sms: tuple[int, int]
    _contexts: tuple


def partitioned_streams(first_sms: int, device: int | torch.device | None = None) -> SmPartition:
    """Split the device's multiprocessors into `first_sms` (rounded by the driver) and the rest, a
    non-blocking stream on each. Raises PartitionError where the driver or the card cannot."""
    try:
        from cuda.bindings import driver
    except ImportError as e:
        raise PartitionError("splitting the card needs the CUDA driver's Python bindings: pip install "
                             "cuda-bindings (the version of the card's CUDA)") from e
    index = torch.cuda._get_device_index(device, optional=True)  # None or a bare "cuda": the current device
    torch.cuda.init()  # the primary context first: the green contexts retain it
    try:
        return _split(driver, index, first_sms)
    except (AttributeError, TypeError) as e:  # bindings older than green contexts, or of another signature
        raise PartitionError(f"these CUDA driver bindings cannot split the card ({type(e).__name__}: {e}); "
                             "cuda-bindings 12.4 or later has green contexts") from e


def _split(driver, index: int, first_sms: int) -> SmPartition:
    _check(driver.cuInit(0))
    dev = _check(driver.cuDeviceGet(index))
    whole = _check(driver.cuDeviceGetDevResource(dev, driver.CUdevResourceType.CU_DEV_RESOURCE_TYPE_SM))
    total = whole.sm.smCount
    if not 0 < first_sms < total:
        raise PartitionError(f"first_sms={first_sms}: give a count between 1 and {total - 1} (the card has {total})")
    groups, _, rest = _check(driver.cuDevSmResourceSplitByCount(1, whole, 0, first_sms))
    part = groups[0]
    streams, contexts = [], []
    for resource in (part, rest):
        desc = _check(driver.cuDevResourceGenerateDesc([resource], 1))
        ctx = _check(driver.cuGreenCtxCreate(desc, dev, int(driver.CUgreenCtxCreate_flags.CU_GREEN_CTX_DEFAULT_STREAM)))
        # the default priority: each part's multiprocessors are its own, no other stream competes for them
        flags = int(driver.CUstream_flags.CU_STREAM_NON_BLOCKING)
        stream = _check(driver.cuGreenCtxStreamCreate(ctx, flags, 0))
        contexts.append(ctx)
        streams.append(torch.cuda.ExternalStream(int(stream), device=torch.device("cuda", index)))
    return SmPartition(streams[0], streams[1], (part.sm.smCount, rest.sm.smCount), tuple(contexts))
