"""IPP said once (RFC 8010, RFC 8011, PWG 5100.x): delimiter and value tags, operation ids,
status codes, and the printer and job state enums, shared by the client (``printers/``),
the server (``ipp_server/``) and the tests' printers.

The names are the specification's, upper-cased (``server-error-busy`` →
``Status.SERVER_ERROR_BUSY``); :func:`keyword` and :func:`operation_name` give them back
in the specification's spelling. Pure: no I/O, nothing above the leaves.
"""

from __future__ import annotations

from enum import IntEnum


class GroupTag(IntEnum):
    """Delimiter tags that open an attribute group (RFC 8010 §3.5.1, RFC 8011 and PWG 5100)."""

    OPERATION = 0x01
    JOB = 0x02
    PRINTER = 0x04
    UNSUPPORTED = 0x05
    SUBSCRIPTION = 0x06
    EVENT_NOTIFICATION = 0x07
    RESOURCE = 0x08
    DOCUMENT = 0x09
    SYSTEM = 0x0A


#: The delimiter that ends the attributes; the document data follows it.
END_OF_ATTRIBUTES = 0x03


class Tag(IntEnum):
    """Value tags (RFC 8010 §3.5.2)."""

    UNSUPPORTED = 0x10
    DEFAULT = 0x11
    UNKNOWN = 0x12
    NO_VALUE = 0x13
    NOT_SETTABLE = 0x15
    DELETE_ATTRIBUTE = 0x16
    ADMIN_DEFINE = 0x17
    INTEGER = 0x21
    BOOLEAN = 0x22
    ENUM = 0x23
    OCTET_STRING = 0x30
    DATE_TIME = 0x31
    RESOLUTION = 0x32
    RANGE_OF_INTEGER = 0x33
    BEG_COLLECTION = 0x34
    TEXT_WITH_LANGUAGE = 0x35
    NAME_WITH_LANGUAGE = 0x36
    END_COLLECTION = 0x37
    TEXT = 0x41
    NAME = 0x42
    KEYWORD = 0x44
    URI = 0x45
    URI_SCHEME = 0x46
    CHARSET = 0x47
    NATURAL_LANGUAGE = 0x48
    MIME_MEDIA_TYPE = 0x49
    MEMBER_ATTR_NAME = 0x4A


class Operation(IntEnum):
    """Operation ids edgeprint sends or serves (RFC 8011 §5.4.15, PWG 5100.13)."""

    PRINT_JOB = 0x0002
    PRINT_URI = 0x0003
    VALIDATE_JOB = 0x0004
    CREATE_JOB = 0x0005
    SEND_DOCUMENT = 0x0006
    SEND_URI = 0x0007
    CANCEL_JOB = 0x0008
    GET_JOB_ATTRIBUTES = 0x0009
    GET_JOBS = 0x000A
    GET_PRINTER_ATTRIBUTES = 0x000B
    HOLD_JOB = 0x000C
    RELEASE_JOB = 0x000D
    RESTART_JOB = 0x000E
    PAUSE_PRINTER = 0x0010
    RESUME_PRINTER = 0x0011
    PURGE_JOBS = 0x0012
    SET_JOB_ATTRIBUTES = 0x0014
    CLOSE_JOB = 0x003B
    IDENTIFY_PRINTER = 0x003C
    VALIDATE_DOCUMENT = 0x003D
    CANCEL_MY_JOBS = 0x0039


class Status(IntEnum):
    """Status codes (RFC 8011 Appendix B, PWG 5100.13, the IANA IPP registry)."""

    SUCCESSFUL_OK = 0x0000
    SUCCESSFUL_OK_IGNORED_OR_SUBSTITUTED_ATTRIBUTES = 0x0001
    SUCCESSFUL_OK_CONFLICTING_ATTRIBUTES = 0x0002
    CLIENT_ERROR_BAD_REQUEST = 0x0400
    CLIENT_ERROR_FORBIDDEN = 0x0401
    CLIENT_ERROR_NOT_AUTHENTICATED = 0x0402
    CLIENT_ERROR_NOT_AUTHORIZED = 0x0403
    CLIENT_ERROR_NOT_POSSIBLE = 0x0404
    CLIENT_ERROR_TIMEOUT = 0x0405
    CLIENT_ERROR_NOT_FOUND = 0x0406
    CLIENT_ERROR_GONE = 0x0407
    CLIENT_ERROR_REQUEST_ENTITY_TOO_LARGE = 0x0408
    CLIENT_ERROR_REQUEST_VALUE_TOO_LONG = 0x0409
    CLIENT_ERROR_DOCUMENT_FORMAT_NOT_SUPPORTED = 0x040A
    CLIENT_ERROR_ATTRIBUTES_OR_VALUES_NOT_SUPPORTED = 0x040B
    CLIENT_ERROR_URI_SCHEME_NOT_SUPPORTED = 0x040C
    CLIENT_ERROR_CHARSET_NOT_SUPPORTED = 0x040D
    CLIENT_ERROR_CONFLICTING_ATTRIBUTES = 0x040E
    CLIENT_ERROR_COMPRESSION_NOT_SUPPORTED = 0x040F
    CLIENT_ERROR_COMPRESSION_ERROR = 0x0410
    CLIENT_ERROR_DOCUMENT_FORMAT_ERROR = 0x0411
    CLIENT_ERROR_DOCUMENT_ACCESS_ERROR = 0x0412
    CLIENT_ERROR_ATTRIBUTES_NOT_SETTABLE = 0x0413
    CLIENT_ERROR_IGNORED_ALL_SUBSCRIPTIONS = 0x0414
    CLIENT_ERROR_TOO_MANY_SUBSCRIPTIONS = 0x0415
    CLIENT_ERROR_IGNORED_ALL_NOTIFICATIONS = 0x0416
    CLIENT_ERROR_PRINT_SUPPORT_FILE_NOT_FOUND = 0x0417
    CLIENT_ERROR_DOCUMENT_PASSWORD_ERROR = 0x0418
    CLIENT_ERROR_DOCUMENT_PERMISSION_ERROR = 0x0419
    CLIENT_ERROR_DOCUMENT_SECURITY_ERROR = 0x041A
    CLIENT_ERROR_DOCUMENT_UNPRINTABLE = 0x041B
    SERVER_ERROR_INTERNAL_ERROR = 0x0500
    SERVER_ERROR_OPERATION_NOT_SUPPORTED = 0x0501
    SERVER_ERROR_SERVICE_UNAVAILABLE = 0x0502
    SERVER_ERROR_VERSION_NOT_SUPPORTED = 0x0503
    SERVER_ERROR_DEVICE_ERROR = 0x0504
    SERVER_ERROR_TEMPORARY_ERROR = 0x0505
    SERVER_ERROR_NOT_ACCEPTING_JOBS = 0x0506
    SERVER_ERROR_BUSY = 0x0507
    SERVER_ERROR_JOB_CANCELED = 0x0508
    SERVER_ERROR_MULTIPLE_DOCUMENT_JOBS_NOT_SUPPORTED = 0x0509


#: Out-of-band value tags: no value, only the tag says something (RFC 8010 §3.8).
OUT_OF_BAND = frozenset(range(0x10, 0x20))


class PrinterState(IntEnum):
    """printer-state (RFC 8011 §5.4.11)."""

    IDLE = 3
    PROCESSING = 4
    STOPPED = 5


class JobState(IntEnum):
    """job-state (RFC 8011 §5.3.7)."""

    PENDING = 3
    PENDING_HELD = 4
    PROCESSING = 5
    PROCESSING_STOPPED = 6
    CANCELED = 7
    ABORTED = 8
    COMPLETED = 9


def state_keyword(printer_state: int) -> str:
    """A printer-state value in words (``idle``, ``processing``, ``stopped``); a value
    outside RFC 8011's three as its number."""
    try:
        return keyword(PrinterState(printer_state))
    except ValueError:
        return str(printer_state)


def keyword(value: IntEnum) -> str:
    """A name as IPP spells it: ``Status.SERVER_ERROR_BUSY`` → ``server-error-busy``,
    ``PrinterState.IDLE`` → ``idle``, ``Tag.NAME_WITH_LANGUAGE`` → ``name-with-language``."""
    return value.name.lower().replace("_", "-")


def operation_name(op: IntEnum) -> str:
    """An operation as RFC 8011 spells it: ``Operation.GET_JOBS`` → ``Get-Jobs`` (pyipp's
    enum of operations is named the same way)."""
    return "-".join(w.capitalize() for w in op.name.split("_"))
