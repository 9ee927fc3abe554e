"""A check that code never makes the host wait for the GPU, run on the CPU."""

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class HostWaits(TorchDispatchMode):
    """The operators run under it that make the host wait for a GPU: reading a tensor's value
    (.item(), bool()) or computing a result whose size depends on the data (nonzero, boolean
    indexing, masked_select, unique)."""

    READS_DATA = {"_local_scalar_dense", "nonzero", "masked_select", "_unique2", "unique_dim"}
    INDEXING = {"index", "index_put", "index_put_", "_index_put_impl_"}

    def __init__(self):
        super().__init__()
        self.waits = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if name in self.READS_DATA:
            self.waits.append(name)
        elif name in self.INDEXING and any(
            index is not None and index.dtype in (torch.bool, torch.uint8) for index in args[1]
        ):
            self.waits.append(f"{name} with a boolean mask")
        return func(*args, **(kwargs or {}))
