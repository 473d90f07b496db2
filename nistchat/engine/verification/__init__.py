"""Stage 4, verification: each sentence of an answer checked against the passages, citation marks
repaired and matched, a question's premise checked against the passages (premise.py), and audit
mode for answers written elsewhere."""
from .audit import METHOD, AuditThresholds, audit, measure_pairs
from .citations import has_mark
from .verify import best_matches, in_quote

__all__ = ["METHOD", "AuditThresholds", "audit", "best_matches", "has_mark", "in_quote", "measure_pairs"]
