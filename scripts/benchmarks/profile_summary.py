"""Where a profiled update's time goes, as a small table (not the trace): the wall time per update,
how much of it the device computes and how much it waits for the host, the device time of each of
fairseq's phases (forward with the LM head and loss, backward, clip-grads, optimizer, ...) and of
each kind of kernel (GEMMs, attention, LayerNorm/GELU/dropout and other elementwise kernels,
softmax/cross-entropy, the optimizer's multi-tensor kernels, copies), and the host's time outside
fairseq's train_step (the next batch, logging).

On a GPU the device events are its kernels and copies; on the CPU (the tests) the aten operators
that call no other operator, so that the same code runs there (torch.compile's C++ kernels are no
operators: the CPU table shows the code runs, not where a compiled model's time goes).
"""

import re

PHASES = ("forward", "backward", "reduce-grads", "multiply-grads", "clip-grads", "optimizer")
# a kernel's (GPU) or operator's (CPU) name -> its kind; the first pattern that matches wins
KINDS = (
    ("softmax / cross-entropy", r"softmax|nll_loss|cross_entropy|logsumexp"),
    ("attention", r"flash|fmha|attention|sdpa"),
    ("optimizer (multi-tensor)", r"adam|multi_tensor|foreach"),
    (
        "GEMM",
        r"gemm|cutlass|cublas|xmma|nvjet|wgmma|scaled_mm|aten::mm\b|aten::addmm|aten::bmm|matmul",
    ),
    (
        "LayerNorm / GELU / dropout / elementwise",
        r"layer_norm|gelu|dropout|triton|elementwise|reduce|aten::(add|mul|sub|div|fill|where)",
    ),
    ("copies / indexing", r"memcpy|memset|copy|cat|index|gather|scatter|to_copy|clone"),
)
TRAIN_STEP = "train_step"  # fairseq_route.profile_updates names fairseq's Trainer.train_step so


def kind_of(name: str) -> str:
    for kind, pattern in KINDS:
        if re.search(pattern, name, re.IGNORECASE):
            return kind
    return "other"


def union_us(intervals) -> float:
    """The length of the union of (start, end) intervals."""
    total, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total


def containing(spans, time) -> str | None:
    """The name of the innermost (shortest) span holding TIME."""
    holding = [(stop - start, name) for name, start, stop in spans if start <= time <= stop]
    return min(holding)[1] if holding else None


def time_shares(events) -> dict:
    """The summary of a profile's events (torch.profiler's ``prof.events()``) over its
    ProfilerStep spans: {"updates", "rows": [{"what", "ms_per_update", "share_of_wall"}]}."""
    from torch.autograd import DeviceType

    def span(event):
        return event.time_range.start, event.time_range.end

    cpu = [e for e in events if e.device_type == DeviceType.CPU]
    annotations = [e for e in cpu if e.is_user_annotation]
    steps = [span(e) for e in annotations if e.name.startswith("ProfilerStep")]
    if not steps:
        raise ValueError("the profile has no ProfilerStep spans: profile with a schedule")
    first, last = min(start for start, _ in steps), max(stop for _, stop in steps)
    kernels = [e for e in events if e.device_type != DeviceType.CPU and not e.is_user_annotation]
    device = kernels or [  # on the CPU: the aten operators that call no other operator
        e
        for e in cpu
        if e.name.startswith("aten::") and not any(not c.is_user_annotation for c in e.cpu_children)
    ]
    device = [e for e in device if first <= e.time_range.start <= last]
    by_id = {e.id: e for e in cpu}
    cpu_phases = [(e.name, *span(e)) for e in annotations if e.name in PHASES]
    device_phases = [
        (e.name, *span(e))
        for e in events
        if e.device_type != DeviceType.CPU and e.is_user_annotation and e.name in PHASES
    ]

    def phase_of(event) -> str:
        launcher = by_id.get(getattr(event, "linked_correlation_id", 0))
        return (
            containing(device_phases, event.time_range.start)
            or (launcher and containing(cpu_phases, launcher.time_range.start))
            or containing(cpu_phases, event.time_range.start)
            or "outside fairseq's phases"
        )

    updates = len(steps)
    wall = sum(stop - start for start, stop in steps)
    busy = union_us(span(e) for e in device)
    outside = wall - sum(
        stop - start for e in annotations if e.name == TRAIN_STEP for start, stop in [span(e)]
    )
    totals = {"phase": {}, "kernels": {}}
    for event in device:
        duration = event.time_range.end - event.time_range.start
        for group, key in (("phase", phase_of(event)), ("kernels", kind_of(event.name))):
            totals[group][key] = totals[group].get(key, 0.0) + duration

    def row(what, microseconds):
        return {
            "what": what,
            "ms_per_update": round(microseconds / updates / 1000, 3),
            "share_of_wall": round(microseconds / wall, 4),
        }

    rows = [
        row("wall (ProfilerStep spans)", wall),
        row("device busy", busy),
        row("device idle: host gaps", wall - busy),
        row("host outside train_step: next batch, logging", outside),
    ]
    for group in ("phase", "kernels"):
        for key, microseconds in sorted(totals[group].items(), key=lambda item: -item[1]):
            rows.append(row(f"{group}: {key}", microseconds))
    device_events = "GPU kernels and copies" if kernels else "CPU aten operators calling no other"
    return {"updates": updates, "device_events": device_events, "rows": rows}


def markdown(summary: dict, title: str) -> str:
    """The summary as a Markdown table."""
    lines = [
        f"{title} ({summary['updates']} updates)",
        "",
        "| what | ms per update | share of wall |",
        "| --- | ---: | ---: |",
    ]
    lines += [
        f"| {row['what']} | {row['ms_per_update']:.3f} | {100 * row['share_of_wall']:.1f}% |"
        for row in summary["rows"]
    ]
    return "\n".join(lines) + "\n"
