"""Stage 3, retrieval: the question shaped (follow-ups, identifiers, scope), each list searched
(dense, BM25, exact identifiers, the second embedder, a rewrite), fused, reranked and expanded to
the parent passages the reader is handed."""
from .retriever import MODES, Retriever, unknown_docs_message
from .rewrite import Rewriter
from .risk import Risk, RiskTable, classify as classify_risk
from .translate import Translator, typed_language

__all__ = ["MODES", "Retriever", "Rewriter", "Risk", "RiskTable", "Translator", "classify_risk", "typed_language",
           "unknown_docs_message"]
