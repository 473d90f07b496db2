"""Every retrieval rule by name, with the setting that turns it off, so `nistchat eval retrieval
--ablate` can measure what each one is worth on dev and on test (docs/decisions.md keeps the results)."""
from __future__ import annotations

from ...config import nest

RULES: dict[str, tuple[str, object]] = {
    "second_embedder": ("retrieval.second_embedder", ""),
    "exact_identifiers": ("retrieval.exact_depth", 0),
    "named_document_scope": ("retrieval.scope_named_docs", False),
    "join_split_prose": ("retrieval.join_split_prose", False),
    "weighted_budget": ("retrieval.weighted_budget", False),
}


def rule_off(name: str) -> dict:
    """The settings change (nested tables) that turns rule `name` off."""
    key, value = RULES[name]
    return nest({key: value})
