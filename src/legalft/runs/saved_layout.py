"""What differs between a saved config and a requested one when a run folder is resumed (``config_differences``),
both read in this release's layout (``legalft.runs.migrations``)."""

from __future__ import annotations

from legalft.runs.migrations import WINDOW_KEYS, in_current_layout

__all__ = ["IGNORED_ON_RESUME", "WINDOW_KEYS", "config_differences"]

# Where a run writes, how it is watched, what it keeps and which model scores its explanations do not change
# what it trains.
IGNORED_ON_RESUME = ("paths", "logger", "checkpoints", "explanations")
CACHES = ("datamodule.cache_dir",)  # where tokenised windows are kept: the same windows from any folder, or none


def config_differences(saved_yaml: str, requested_yaml: str) -> list[str]:
    """``key: saved -> requested`` for every setting that differs, dotted keys, sorted. Paths are
    compared relative to the run's ``paths`` (its run folder, project folder...), so a run folder
    copied or moved elsewhere still resumes."""
    import yaml

    def flat(tree, prefix=""):
        if isinstance(tree, dict):
            items = {}
            for key, value in tree.items():
                if not prefix and key in IGNORED_ON_RESUME:
                    continue
                items.update(flat(value, f"{prefix}{key}."))
            return items
        return {prefix[:-1]: tree}

    def relative_to_paths(tree: dict) -> dict:
        paths = sorted(((str(v), k) for k, v in (tree.get("paths") or {}).items() if v), key=lambda p: -len(p[0]))

        def relative(value):
            if isinstance(value, str):
                for path, key in paths:
                    value = value.replace(path, f"<paths.{key}>")
            return value

        return {key: relative(value) for key, value in flat(tree).items() if key not in CACHES}

    saved = relative_to_paths(in_current_layout(yaml.safe_load(saved_yaml) or {}))
    requested = relative_to_paths(in_current_layout(yaml.safe_load(requested_yaml) or {}))
    return [
        f"{key}: {saved.get(key, '<unset>')!r} -> {requested.get(key, '<unset>')!r}"
        for key in sorted(saved.keys() | requested.keys())
        if saved.get(key, "<unset>") != requested.get(key, "<unset>")
    ]
