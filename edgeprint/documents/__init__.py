"""What a document is and what a printer can take.

``check`` checks a PDF at submission (pypdf); ``capabilities`` reads what a
printer says it takes; ``ladder`` picks the format to send; ``render``
rasterises PDF pages (pypdfium2, in a process pool); ``pwg`` and ``urf`` encode
the rasters; ``cache`` keeps renditions under ``data_dir``.

The names of ``check`` are re-exported so ``documents.count_pages`` keeps working.
"""

from edgeprint.documents.check import MAX_TREE_DEPTH, count_pages

__all__ = ["MAX_TREE_DEPTH", "count_pages"]
