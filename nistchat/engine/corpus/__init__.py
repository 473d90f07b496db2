"""Stage 1, the corpus: documents read from Markdown (word repair, tables, figures), chunked into
parents and children, the catalogue of titles and aliases, and the official PDFs' download."""
from .catalog import Catalog, DocEntry, documents
from .download import download_corpus

__all__ = ["Catalog", "DocEntry", "documents", "download_corpus"]
