"""scripts/benchmark_preprocess.py's summary of the two routes: each stage's and the whole run's
costs, and the ratios of standard's cost over ours (above 1: ours costs less), every one of them
a cost over a cost, so that none reads the other way (rates enter as their inverse: seconds per
document or token)."""

# the JSON's key of cost_ratios' result: what each ratio is
RATIOS_KEY = "ratios_standard_over_ours"


def stage(result: dict, documents: int, tokens: int) -> dict:
    """One stage's medians (benchmark_preprocess.repeated) and its rates."""
    seconds = result["seconds"]
    return {
        "seconds": round(seconds, 3),
        "runs_seconds": result["runs_seconds"],
        "cpu_seconds": round(result["cpu_seconds"], 2),
        "documents_per_s": round(documents / seconds, 1),
        "tokens_per_s": round(tokens / seconds, 1),
        "peak_rss_mb": round(result["peak_rss_mb"], 1),
        "peak_pss_mb": round(result["peak_pss_mb"], 1),
        "load_average_1m_after_each_run": result["load_average_1m"],
    }


def end_to_end(stages: dict, documents: int, tokens: int) -> dict:
    """A route's stages together: seconds and CPU seconds summed, the highest peaks."""
    seconds = sum(s["seconds"] for s in stages.values())
    return {
        "seconds": round(seconds, 3),
        "cpu_seconds": round(sum(s["cpu_seconds"] for s in stages.values()), 2),
        "documents_per_s": round(documents / seconds, 1),
        "tokens_per_s": round(tokens / seconds, 1),
        "peak_rss_mb": max(s["peak_rss_mb"] for s in stages.values()),
        "peak_pss_mb": max(s["peak_pss_mb"] for s in stages.values()),
    }


def cost_ratios(ours: dict, standard: dict, standard_tokens: int) -> dict:
    """Standard's cost over ours of the whole run's and the stages' seconds, CPU seconds, seconds
    per document or token and peak memory (ours: parse, encode+binarize; standard: parse, encode,
    binarize, end_to_end)."""
    ours_all, standard_all = ours["end_to_end"], standard["end_to_end"]
    standard_encode_binarize = standard["encode"]["seconds"] + standard["binarize"]["seconds"]
    costs = {  # name: (standard's, ours)
        "end_to_end_seconds": (standard_all["seconds"], ours_all["seconds"]),
        "end_to_end_cpu_seconds": (standard_all["cpu_seconds"], ours_all["cpu_seconds"]),
        "parse_cpu_seconds": (standard["parse"]["cpu_seconds"], ours["parse"]["cpu_seconds"]),
        "end_to_end_seconds_per_document": (
            1 / standard_all["documents_per_s"], 1 / ours_all["documents_per_s"]
        ),
        "end_to_end_seconds_per_token": (
            1 / standard_all["tokens_per_s"], 1 / ours_all["tokens_per_s"]
        ),
        "parse_seconds": (standard["parse"]["seconds"], ours["parse"]["seconds"]),
        "encode_and_binarize_seconds": (
            standard_encode_binarize, ours["encode+binarize"]["seconds"]
        ),
        "encode_and_binarize_seconds_per_token": (
            standard_encode_binarize / standard_tokens, 1 / ours["encode+binarize"]["tokens_per_s"]
        ),
        "peak_rss": (standard_all["peak_rss_mb"], ours_all["peak_rss_mb"]),
        "peak_pss": (standard_all["peak_pss_mb"], ours_all["peak_pss_mb"]),
    }  # fmt: skip
    return {name: round(theirs / own, 2) for name, (theirs, own) in costs.items()}
