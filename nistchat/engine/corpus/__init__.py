"""Stage 1, the corpus: documents read from Markdown (word repair, tables, figures), chunked into
parents and children, the catalogue of titles and aliases, and the official PDFs' download."""
from .catalog import Catalog, DocEntry
from .catalog import documents as indexed_documents  # not `documents`: that is the reader's module
from .download import download_corpus

__all__ = ["Catalog", "DocEntry", "download_corpus", "indexed_documents"]
