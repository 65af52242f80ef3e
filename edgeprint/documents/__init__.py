"""What a document is and what a printer can take.

``check`` checks a PDF at submission (pypdf); ``capabilities`` reads what a
printer says it takes; ``ladder`` picks the format to send; ``render`` runs
the render workers (a process pool) that use ``raster`` (PDFium via pypdfium2)
and the encoders ``pwg`` and ``urf``; ``cache`` keeps renditions under
``data_dir``; ``rendition`` is what a sender reads (cached, or rendered and
cached on the way); ``formats`` names what the IPP queues take and sniffs
``application/octet-stream``.

The names of ``check`` are re-exported so ``documents.count_pages`` keeps working; they
are imported at their first use, so that importing the package (``ladder``, ``zpl`` at
start-up) does not import pypdf (issue 28: start-up imports what it needs).
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from edgeprint.documents.check import MAX_TREE_DEPTH, PdfFacts, count_pages, inspect_pdf

__all__ = ["MAX_TREE_DEPTH", "PdfFacts", "count_pages", "inspect_pdf"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from edgeprint.documents import check

        return getattr(check, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
