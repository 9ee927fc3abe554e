"""Peak memory of a measurement: each runs in its own process, so the process's peak is its own."""

import resource


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def peak_memory(cpu: bool) -> dict:
    import torch

    if cpu:
        return {"peak_rss_mb": round(peak_rss_mb())}
    return {"peak_gpu_memory_gb": round(torch.cuda.max_memory_allocated() / 2**30, 2)}


def track_peak_gpu_memory():
    """fairseq's trainer resets CUDA's peak-memory counter every update: keep the largest peak seen
    before each reset, so the figure covers the whole run. Returns a function giving it in GB."""
    import torch

    largest = [0]
    reset = torch.cuda.reset_peak_memory_stats

    def reset_keeping_largest(*args, **kwargs):
        largest[0] = max(largest[0], torch.cuda.max_memory_allocated())
        reset(*args, **kwargs)

    torch.cuda.reset_peak_memory_stats = reset_keeping_largest
    return lambda: round(max(largest[0], torch.cuda.max_memory_allocated()) / 2**30, 2)
