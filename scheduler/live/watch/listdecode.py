"""The bytes the API server sends, decoded: LIST bodies piece by piece while they arrive
(``ListDecoder``), watch streams line by line (``iter_lines``), and Pods and Nodes without the
bytes of their managedFields (``drop_managed_fields``). Byte work on orjson with no I/O of its
own. It runs for every object the watch receives (the start-up LIST is most of the start-up), so
it stays flat: no call layers per item.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    import aiohttp


async def iter_lines(content: aiohttp.StreamReader) -> AsyncIterator[list[bytes]]:
    """Whole lines of a watch stream, in the batches the socket delivered them (kopf's
    iter_jsonlines, batched so the caller can yield to the event loop once per batch)."""
    buffer = b""
    async for data in content.iter_any():
        buffer += data
        if b"\n" not in data:
            continue
        *lines, buffer = buffer.split(b"\n")
        yield [line for line in lines if line]
    if buffer.strip():
        yield [buffer]


# Between two items of a LIST body, as the API server writes it (encoding/json, no spaces, each
# built-in item starting with its metadata). Inside a JSON string every '"' is escaped, so the
# bytes can only be a boundary between objects; one inside an item would leave the piece before
# it unbalanced, which the decoder notices.
_ITEM_BOUNDARY = b'},{"metadata":{'
_ITEMS_OPEN = b'"items":['
_HEAD_MAX = 64 * 1024


# managedFields is the last field of ObjectMeta, and a Pod's or Node's spec comes right after its
# metadata, so in the API server's compact JSON the list runs from the first marker to the
# first end marker after it. Neither marker can sit inside a JSON string (its quotes would be
# escaped), and fieldsV1 keys are "f:spec", never "spec".
_MF_START = b',"managedFields":[{'
_MF_END = b'}]},"spec":'
_NEXT_OBJECT = b'"metadata":{'
# Kinds whose objects always have a spec after their metadata.
SPEC_AFTER_METADATA = frozenset({"Pod", "Node"})


def drop_managed_fields(data: bytes | bytearray) -> bytes | bytearray:
    """``data`` (whole Pod or Node objects, a list piece or a watch line) without the bytes of
    every metadata.managedFields, before decoding: they are 40% of a pod's bytes and most of
    its JSON objects, and nothing reads them (kube-scheduler's informers drop them too). A
    marker pair that would span two objects is left alone (the decoded dict is trimmed then)."""
    find = data.find
    i = find(_MF_START)
    if i < 0:
        return data
    out: list[bytes | bytearray] = []
    pos = 0
    while i >= 0:
        j = find(_MF_END, i)
        if j < 0:
            break
        if find(_NEXT_OBJECT, i, j) >= 0:  # this object has no spec after its metadata
            i = find(_MF_START, i + 1)
            continue
        out.append(data[pos:i])
        out.append(b"}")  # closes the metadata
        pos = j + 3  # at ',"spec":'
        i = find(_MF_START, pos)
    if not out:
        return data
    out.append(data[pos:])
    return b"".join(out)


def loads(data: bytes | bytearray, trim: bool = False) -> Any:
    """orjson's decode; with ``trim``, of the bytes without managedFields (the whole bytes if
    that does not decode, so a layout the markers misread costs time, never an object)."""
    if trim:
        cut = drop_managed_fields(data)
        if cut is not data:
            try:
                return orjson.loads(cut)
            except orjson.JSONDecodeError:
                pass
    return orjson.loads(data)


class ListDecoder:
    """Decodes a LIST response body piece by piece while it is still arriving.

    A 26 MB pod list takes the API server about as long to write as orjson takes to decode it;
    decoding the items that are complete while the rest is on its way overlaps the two. The body
    is cut only at item boundaries and every piece goes through orjson whole; a piece that does
    not decode (a boundary that was not one, a body of another shape) ends the cutting, and
    ``close`` decodes the list's head with everything not yet returned, as one document.
    ``trim``: the items are Pods or Nodes, decoded without their managedFields (``loads``)."""

    __slots__ = ("_buf", "_head", "_scanned", "_whole", "meta", "min_piece", "trim")

    def __init__(self, min_piece: int = 256 * 1024, trim: bool = False) -> None:
        self.min_piece = min_piece
        self.trim = trim
        self._buf = bytearray()  # bytes not yet decoded, starting at an item (once the head is cut)
        self._head: bytes | None = None  # the body up to and including '"items":['
        self._whole = False  # stop cutting: decode what is left in one go at close
        self._scanned = 0  # bytes of the buffer already searched in vain for a boundary
        self.meta: dict[str, Any] = {}  # the list's metadata, once closed

    def feed(self, chunk: bytes) -> list[Any]:
        """Items that are complete in the bytes so far (possibly none)."""
        buf = self._buf
        buf += chunk
        if self._whole:
            return []
        if self._head is None:
            i = buf.find(_ITEMS_OPEN)
            if i < 0:
                # The list's metadata comes first and is short: a body without it early is
                # not one to cut.
                self._whole = len(buf) > _HEAD_MAX
                return []
            end = i + len(_ITEMS_OPEN)
            self._head = bytes(buf[:end])
            del buf[:end]
        if len(buf) < self.min_piece:
            return []
        cut = buf.rfind(_ITEM_BOUNDARY, max(0, self._scanned - len(_ITEM_BOUNDARY)))
        if cut < 0:
            self._scanned = len(buf)  # one huge item: search only the new bytes next time
            return []
        try:
            items: list[Any] = loads(b"[" + buf[: cut + 1] + b"]", self.trim)
        except orjson.JSONDecodeError:
            self._whole = True
            return []
        del buf[: cut + 2]  # through the comma: the next item's '{' starts the buffer
        self._scanned = 0
        return items

    def close(self) -> list[Any]:
        """The items not returned by ``feed``; sets ``meta``. Raises on a bad body."""
        doc = loads((self._head or b"") + self._buf, self.trim)
        self._buf = bytearray()
        if not isinstance(doc, dict):
            raise ValueError(f"list body is a JSON {type(doc).__name__}, not an object")
        meta = doc.get("metadata")
        self.meta = meta if isinstance(meta, dict) else {}
        return list(doc.get("items") or ())

    async def items(self, content: aiohttp.StreamReader) -> AsyncIterator[Any]:
        """Every item of the body read from ``content``, in order, as soon as it is complete."""
        async for chunk in content.iter_any():
            for item in self.feed(chunk):
                yield item
        for item in self.close():
            yield item
