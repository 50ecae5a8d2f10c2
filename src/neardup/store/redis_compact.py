"""The compact Redis store: what a fleet's decisions need, in about a kilobyte of RAM a document.

The guarantees are the Redis store's (:mod:`neardup.store.redis`): a batch is decided under
optimistic concurrency and added by one Lua script, atomically, only where nothing it read
changed (two workers that see the same story at once keep exactly one); a window is also a
TTL. What the namespace holds is compact — a few keys per thousand documents, not dozens per
document:

- ``NS:b:N``: **blocks** of 32 documents by sequence number (document ``seq`` is slot
  ``seq % 32`` of block ``seq // 32``): a header of 33 offsets, then each document's record —
  its id, decision, title, the hash of its exact text and, unless it is dropped as a copy,
  its compact sketch (:mod:`neardup.engine.compact`). A block expires with the window, ``ttl``
  after its last write.
- ``NS:s:N``: the **lookup table**, records of a 40-bit key and a sequence number (8 bytes)
  in shards grown by linear hashing (:mod:`._packed`, state in ``NS:h``): the LSH buckets of
  the documents not dropped as copies, and one record a document for its id, the first
  document of each exact text, the members of each cluster and the documents a kept one
  extends. A reader skips records whose document is gone; a shard being written drops those
  below the lowest live sequence number (``NS:floor``, moved on as blocks expire), and a
  batch removes the stale ones it read.
- ``NS:log`` (with ``NS:logbase``, the position of its first element) and ``NS:common``:
  the template-guard slots of each story since the saved count table, as in the compact
  SQLite store; ``NS:saving``, while a process saves the table (see
  :meth:`~neardup.store.Store.claim_save`).
- ``NS:n``, ``NS:kept``, ``NS:seq``; ``NS:clusters`` (a sorted set: for each cluster with
  members besides its kept document, how many); per block, when it was written (``NS:bw``),
  its earliest timestamp (``NS:bts``) and counts (``NS:bn``); ``NS:t:N``, blocks of texts
  (``?keep_text=1``).

A namespace written before compact stores (``format=full``) opens as it was
(:class:`~neardup.store.redis.RedisStore`); ``?format=full`` makes a new one of that kind.
"""

from __future__ import annotations

import dataclasses
import json
import struct
import time
import zlib
from collections.abc import Container, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import xxhash

from ..engine import Sketch
from ..engine.compact import decode, decode_slots
from ..errors import ConfigError, NeardupError, StoreError
from ..hashing import SEED
from . import (
    FORMAT,
    LOG_BYTES,
    LOG_SHARE,
    NO_SLOTS,
    BandKey,
    Entry,
    LogPage,
    NewEntry,
    Stored,
    format_found,
)
from ._packed import KEY_MASK, LEVEL, RECORD, keys40
from .redis import EPOCH_CHECK, RedisStore

__all__ = ["CompactRedisStore"]

#: documents a block holds
BLOCK = 32
_HEAD = 4 * (BLOCK + 1)
#: records a shard holds on average before the table grows (a key costs about 70 bytes)
CAP = 128

_KINDS = {"id": 1, "exact": 2, "cluster": 3, "extends": 4}


def _key(kind: str, value: str | int) -> bytes:
    """The 5-byte lookup key of an id, an exact-text hash, a cluster label or an extended id."""
    raw = str(value).encode("utf-8", "surrogatepass")
    h = xxhash.xxh3_64_intdigest(raw, SEED + _KINDS[kind]) & int(KEY_MASK)
    return h.to_bytes(5, "little")


def _band(keys: Sequence[int]) -> list[bytes]:
    raw = _band_bytes(keys)
    return [raw[i : i + 5] for i in range(0, len(raw), 5)]


def _band_bytes(keys: Sequence[int]) -> bytes:
    """The 5-byte lookup keys of LSH buckets, one after another."""
    wide = keys40(list(keys)).astype("<u8").view(np.uint8).reshape(-1, 8)
    return wide[:, :5].tobytes()


# -- a document's record -----------------------------------------------------------------------

_FIXED = struct.Struct("<BddQ")  # flags, timestamp, score, exact-text hash
_KEPT, _STORY, _SKETCH = 1, 2, 4


def _str(value: str | None) -> bytes:
    if value is None:
        return b"\xff\xff"
    raw = value.encode("utf-8", "surrogatepass")
    return struct.pack("<H", len(raw)) + raw


def _record(e: Entry, text_key: int, story: bool, blob: bytes | None) -> bytes:
    """A document's record: its id first (the write script reads it), then its decision."""
    flags = (_KEPT if e.kept else 0) | (_STORY if story else 0) | (_SKETCH if blob else 0)
    cluster = None if e.cluster == e.id else e.cluster
    return b"".join((
        _str(e.id), _FIXED.pack(flags, e.timestamp, e.score, text_key),
        _str(e.duplicate_of), _str(cluster), _str(e.measure), _str(e.title),
        _str(e.copy_of), _str(e.extends), blob or b"",
    ))  # fmt: skip


def _read_str(raw: bytes, at: int) -> tuple[str | None, int]:
    (n,) = struct.unpack_from("<H", raw, at)
    if n == 0xFFFF:
        return None, at + 2
    return raw[at + 2 : at + 2 + n].decode("utf-8", "surrogatepass"), at + 2 + n


def _parse(seq: int, raw: bytes) -> tuple[Entry, int, bool, bytes | None]:
    """A record's entry, exact-text hash, whether it counted as a story, and its sketch."""
    doc_id, at = _read_str(raw, 0)
    flags, ts, score, text_key = _FIXED.unpack_from(raw, at)
    at += _FIXED.size
    fields = []
    for _ in range(6):
        value, at = _read_str(raw, at)
        fields.append(value)
    dup, cluster, measure, title, copy_of, extends = fields
    assert doc_id is not None
    entry = Entry(
        doc_id, seq, ts, dup, cluster if cluster is not None else doc_id, score, measure,
        title, copy_of, extends,
    )  # fmt: skip
    return entry, text_key, bool(flags & _STORY), raw[at:] if flags & _SKETCH else None


# -- Lua ------------------------------------------------------------------------------------------

_COMMON = """
local ns = ARGV[1]
local BLOCK, HEAD, REC = 32, 132, 8
local function state()
  local v = redis.call('HMGET', ns .. ':h', 'level', 'split', 'count')
  return tonumber(v[1]) or 8, tonumber(v[2]) or 0, tonumber(v[3]) or 0
end
local function num40(k)
  local a, b, c, d, e = string.byte(k, 1, 5)
  return a + b * 256 + c * 65536 + d * 16777216 + e * 4294967296
end
local function shard_of(k, level, split)
  local n = num40(k)
  local low = n % (2 ^ level)
  if low < split then return n % (2 ^ (level + 1)) end
  return low
end
-- a record: bits 8 to 39 of its key (the shard says bits 0 to 7), then its sequence number
local function seqs_of(blob, k)
  local out, i = {}, 1
  local needle = string.sub(k, 2, 5)
  while true do
    local at = string.find(blob, needle, i, true)
    if not at then return out end
    if (at - 1) % REC == 0 then
      out[#out + 1] = struct.unpack('<I4', blob, at + 4)
      i = at + REC
    else
      i = at + 1
    end
  end
end
-- Move the lowest live sequence number past the blocks whose TTL ended (counting their
-- documents out); returns it.
local function advance(ttl, now)
  local floor = tonumber(redis.call('GET', ns .. ':floor') or '0')
  if not ttl then return floor end
  local top = tonumber(redis.call('GET', ns .. ':seq') or '0')
  local block, probes = math.floor(floor / BLOCK), 0
  while math.max(block * BLOCK, 1) <= top and probes < 256
      and redis.call('EXISTS', ns .. ':b:' .. block) == 0 do
    local c = redis.call('HMGET', ns .. ':bn', block .. 'n', block .. 'k')
    if c[1] then redis.call('DECRBY', ns .. ':n', c[1]) end
    if c[2] then redis.call('DECRBY', ns .. ':kept', c[2]) end
    redis.call('HDEL', ns .. ':bn', block .. 'n', block .. 'k')
    redis.call('ZREM', ns .. ':bw', block)
    redis.call('ZREM', ns .. ':bts', block)
    block = block + 1
    probes = probes + 1
    floor = block * BLOCK
  end
  redis.call('SET', ns .. ':floor', floor)
  return floor
end
local function record(seq)
  local bk = ns .. ':b:' .. math.floor(seq / BLOCK)
  local slot = seq % BLOCK
  local head = redis.call('GETRANGE', bk, 4 * slot, 4 * slot + 7)
  if #head < 8 then return nil end
  local lo, hi = struct.unpack('<I4I4', head)
  if hi <= lo then return nil end
  return redis.call('GETRANGE', bk, lo, hi - 1)
end
"""

#: A document's compressed text from the text tier ('' none).
_TEXT_FN = """
local function text_of(q)
  local key = ns .. ':t:' .. math.floor(q / BLOCK)
  local at = 4 * (q % BLOCK)
  local head = redis.call('GETRANGE', key, at, at + 7)
  if #head == 8 then
    local lo, hi = struct.unpack('<I4I4', head)
    if hi > lo then return redis.call('GETRANGE', key, lo, hi - 1) end
  end
  return ''
end
"""

#: The records of each of the 5-byte keys packed one after another in ARGV[at], and the
#: documents they name: the last sequence number given (``NS:seq``), then one string of
#: little-endian 32-bit numbers — for each key found its position among the keys (from 1),
#: how many records, their sequence numbers —, then pairs (sequence number, record) of the
#: documents still stored: triples with its compressed text from the text tier ('' none)
#: where ``texts``. (One string each way rather than a number an element: a client reads
#: and writes them at a fraction of the cost.)
_FIND_FN = (
    _TEXT_FN
    + """
local function find(at, texts)
  local level, split = state()
  local found, docs = {}, {}
  local blobs = {}
  local keys = ARGV[at] or ''
  for i = 1, #keys / 5 do
    local k = string.sub(keys, 5 * i - 4, 5 * i)
    local s = shard_of(k, level, split)
    local blob = blobs[s]
    if not blob then
      blob = redis.call('GET', ns .. ':s:' .. s) or ''
      blobs[s] = blob
    end
    local seqs = seqs_of(blob, k)
    if #seqs > 0 then
      found[#found + 1] = struct.pack('<I4I4', i, #seqs)
      for _, q in ipairs(seqs) do
        found[#found + 1] = struct.pack('<I4', q)
        docs[q] = true
      end
    end
  end
  local out = {tonumber(redis.call('GET', ns .. ':seq') or '0'), table.concat(found)}
  for q, _ in pairs(docs) do
    local r = record(q)
    if r then
      out[#out + 1] = q
      out[#out + 1] = r
      if texts then out[#out + 1] = text_of(q) end
    end
  end
  return out
end
"""
)

#: :data:`_FIND_FN` of the keys in ARGV[3], with the texts where ARGV[2] is '1'.
_FIND = _COMMON + _FIND_FN + "return find(3, ARGV[2] == '1')\n"

#: Add a batch of documents (one bundle each, ARGV[8..7+n]), atomically, up to the first one
#: whose reads changed since it was decided; returns how many were added and the first
#: sequence number. ARGV = namespace, ttl ('' none), now, n, stale records, the last
#: sequence number given when the section first read ('' unknown), the namespace's epoch as
#: the process found it ('' unchecked; another: the NEARDUP_LOST error), bundles. Where none
#: has been given since, no document was added meanwhile: no id and no bucket was read
#: before a record that came after, so only the exact texts and extensions read are checked
#: (a record may have gone: deleted, or its block expired).
_WRITE = (
    _COMMON
    + EPOCH_CHECK
    + """
local lost = refuse_lost(ns, ARGV[7])
if lost then return lost end
local ttl = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local n = tonumber(ARGV[4])
local stale = ARGV[5]
local quiet = ARGV[6] ~= '' and tonumber(redis.call('GET', ns .. ':seq') or '0') == tonumber(ARGV[6])
local level, split, count = state()
local blobs, dirty = {}, {}
local function shard_blob(s)
  local b = blobs[s]
  if not b then
    b = redis.call('GET', ns .. ':s:' .. s) or ''
    blobs[s] = b
  end
  return b
end
local function id_of(r)
  local len = struct.unpack('<I2', r, 1)
  return string.sub(r, 3, 2 + len)
end
-- a string field of a record at ``at``: where the next field starts, and it (nil: none)
local function field(r, at)
  local len = struct.unpack('<I2', r, at)
  if len == 65535 then return at + 2, nil end
  return at + 2 + len, string.sub(r, at + 2, at + 1 + len)
end
-- a record's flags, the 8 bytes of its exact-text hash and the id it extends (or nil): keys
-- of different kinds, or of different values, can fall on the same 40 bits, so a record
-- found under a key is the one looked for only if its own fields say so, as they say it
-- to the reader (CompactRedisStore.exact and .extended)
local function fields(r)
  local at = field(r, 1)
  local flags, hash = string.byte(r, at), string.sub(r, at + 17, at + 24)
  at = at + 25
  for _ = 1, 5 do at = field(r, at) end  -- duplicate_of, cluster, measure, title, copy_of
  local _, extends = field(r, at)
  return flags, hash, extends
end
-- parse the bundles
local docs = {}
for d = 1, n do
  local b = ARGV[7 + d]
  local doc = {}
  local at
  doc.flags, doc.ts, doc.nadd, doc.nchk, at = struct.unpack('<BdI2I2', b)
  doc.add = {}
  for j = 1, doc.nadd do doc.add[j] = string.sub(b, at, at + 4); at = at + 5 end
  doc.chk = {}
  if not quiet then  -- read only where they are checked
    for j = 1, doc.nchk do
      doc.chk[j] = {string.sub(b, at + 9 * (j - 1), at + 9 * (j - 1) + 4),
                    struct.unpack('<I4', b, at + 9 * (j - 1) + 5)}
    end
  end
  at = at + 9 * doc.nchk
  doc.exact = string.sub(b, at, at + 4); doc.exact_seen = struct.unpack('<i8', b, at + 5); at = at + 13
  doc.ext = string.sub(b, at, at + 4); doc.ext_check = string.byte(b, at + 5); at = at + 6
  doc.idkey = string.sub(b, at, at + 4); at = at + 5
  local len
  len, at = struct.unpack('<I2', b, at); doc.id = string.sub(b, at, at + len - 1); at = at + len
  len, at = struct.unpack('<I2', b, at); doc.label = string.sub(b, at, at + len - 1); at = at + len
  len, at = struct.unpack('<I4', b, at); doc.rec = string.sub(b, at, at + len - 1); at = at + len
  len, at = struct.unpack('<I4', b, at); doc.log = string.sub(b, at, at + len - 1); at = at + len
  len, at = struct.unpack('<I4', b, at); doc.text = string.sub(b, at, at + len - 1); at = at + len
  docs[d] = doc
end
-- every check before any write
local limit = n
for d = 1, n do
  local doc = docs[d]
  local changed = false
  if not quiet then
    for _, q in ipairs(seqs_of(shard_blob(shard_of(doc.idkey, level, split)), doc.idkey)) do
      local r = record(q)
      if r and id_of(r) == doc.id then changed = true; break end
    end
  end
  if not changed and not quiet then
    for _, c in ipairs(doc.chk) do
      for _, q in ipairs(seqs_of(shard_blob(shard_of(c[1], level, split)), c[1])) do
        if q > c[2] then changed = true; break end
      end
      if changed then break end
    end
  end
  if not changed and doc.exact_seen >= 0 then
    local _, hash = fields(doc.rec)
    local first = 0
    for _, q in ipairs(seqs_of(shard_blob(shard_of(doc.exact, level, split)), doc.exact)) do
      if first == 0 or q < first then
        local r = record(q)
        if r then
          local _, other = fields(r)
          if other == hash then first = q end
        end
      end
    end
    changed = first ~= doc.exact_seen
  end
  if not changed and doc.ext_check == 1 then
    local _, _, extends = fields(doc.rec)
    for _, q in ipairs(seqs_of(shard_blob(shard_of(doc.ext, level, split)), doc.ext)) do
      local r = record(q)
      if r then
        local flags, _, other = fields(r)
        if flags % 2 == 1 and other == extends then changed = true; break end
      end
    end
  end
  if changed then limit = d - 1; break end
end
-- the lowest live sequence number: blocks gone by their TTL are forgotten
local floor = advance(ttl, now)
local adds = {}
local function add(k, q)
  local s = shard_of(k, level, split)
  local list = adds[s]
  if not list then list = {}; adds[s] = list end
  list[#list + 1] = string.sub(k, 2, 5) .. struct.pack('<I4', q)
end
-- stale records a reader found (their documents are gone)
local gone, stale_in = {}, {}
for i = 1, #stale, 9 do
  local k = string.sub(stale, i, i + 4)
  local s = shard_of(k, level, split)
  gone[string.sub(k, 2, 5) .. string.sub(stale, i + 5, i + 8)] = true
  stale_in[s] = true
  dirty[s] = true
end
local first_seq = 0
local blocks, texts = {}, {}
for d = 1, limit do
  local doc = docs[d]
  local q = redis.call('INCR', ns .. ':seq')
  if d == 1 then first_seq = q end
  for _, k in ipairs(doc.add) do add(k, q) end
  local bn = math.floor(q / BLOCK)
  local slots = blocks[bn]
  if not slots then slots = {}; blocks[bn] = slots end
  slots[q % BLOCK] = doc.rec
  if #doc.text > 0 then
    local t = texts[bn]
    if not t then t = {}; texts[bn] = t end
    t[q % BLOCK] = doc.text
  end
  redis.call('INCR', ns .. ':n')
  redis.call('HINCRBY', ns .. ':bn', bn .. 'n', 1)
  if doc.flags % 2 == 1 then
    redis.call('INCR', ns .. ':kept')
    redis.call('HINCRBY', ns .. ':bn', bn .. 'k', 1)
  end
  if #doc.label > 0 then redis.call('ZINCRBY', ns .. ':clusters', 1, doc.label) end
  if #doc.log > 0 then
    redis.call('RPUSH', ns .. ':log', doc.log)
    redis.call('INCRBY', ns .. ':logbytes', #doc.log)
  end
  redis.call('ZADD', ns .. ':bts', 'LT', doc.ts, bn)
  redis.call('ZADD', ns .. ':bw', 'GT', now, bn)
end
-- Redis's Lua hashes every byte of every string it makes, so a block (up to 32 documents'
-- records or texts) is read whole only where a slot before its last filled one changes, or
-- where its last slot is filled: slots after the last filled one take their bytes by APPEND
-- and the offsets after them by SETRANGE. (An APPEND leaves room to grow, up to the
-- string's size again: a full block is written whole, at its size.)
local function appended(key, slots)
  if slots[BLOCK - 1] ~= nil then return false end
  local low = BLOCK
  for s, _ in pairs(slots) do if s < low then low = s end end
  local head = redis.call('GETRANGE', key, 0, HEAD - 1)
  if #head < HEAD then return false end
  local at = struct.unpack('<I4', head, 1 + 4 * low)
  if at ~= struct.unpack('<I4', head, 1 + 4 * BLOCK) then return false end
  local parts, offsets = {}, {}
  for s = low, BLOCK - 1 do
    local r = slots[s] or ''
    parts[#parts + 1] = r
    at = at + #r
    offsets[#offsets + 1] = struct.pack('<I4', at)
  end
  redis.call('APPEND', key, table.concat(parts))
  redis.call('SETRANGE', key, 4 * (low + 1), table.concat(offsets))
  return true
end
local function write_blocks(prefix, all)
  for bn, slots in pairs(all) do
    local key = ns .. prefix .. bn
    if not appended(key, slots) then
      local old = redis.call('GET', key)
      local parts = {}
      for s = 0, BLOCK - 1 do
        local r = slots[s]
        if r == nil and old then
          local lo, hi = struct.unpack('<I4I4', old, 1 + 4 * s)
          r = string.sub(old, lo + 1, hi)
        end
        parts[s + 1] = r or ''
      end
      local head, at = {}, HEAD
      for s = 0, BLOCK - 1 do
        head[#head + 1] = struct.pack('<I4', at)
        at = at + #parts[s + 1]
      end
      head[#head + 1] = struct.pack('<I4', at)
      redis.call('SET', key, table.concat(head) .. table.concat(parts))
    end
    if ttl then redis.call('EXPIRE', key, ttl) end
  end
end
write_blocks(':b:', blocks)
write_blocks(':t:', texts)
-- the lookup table: the new records, the stale and expired ones out. A shard's records
-- are in the order of their sequence numbers (each batch's are above all before), so
-- those below the floor are a prefix.
local function below(blob)
  local lo, hi = 0, #blob / REC
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if struct.unpack('<I4', blob, mid * REC + 5) < floor then lo = mid + 1 else hi = mid end
  end
  return lo
end
for s, _ in pairs(adds) do dirty[s] = true end
for s, _ in pairs(dirty) do
  local blob = shard_blob(s)
  local size = #blob / REC
  if floor > 0 and size > 0 then
    local cut = below(blob)
    if cut > 0 then blob = string.sub(blob, cut * REC + 1) end
  end
  if stale_in[s] then
    local keep = {}
    for i = 1, #blob, REC do
      local r = string.sub(blob, i, i + REC - 1)
      if not gone[r] then keep[#keep + 1] = r end
    end
    blob = table.concat(keep)
  end
  local add = adds[s]
  if add then blob = blob .. table.concat(add) end
  count = count - size + #blob / REC
  blobs[s] = blob
  if #blob == 0 then
    redis.call('DEL', ns .. ':s:' .. s)
  else
    redis.call('SET', ns .. ':s:' .. s, blob)
  end
end
-- grow the table while its records outgrow the shards
local cap = tonumber(redis.call('HGET', ns .. ':h', 'cap') or '128')
while count > cap * (2 ^ level + split) do
  local blob = shard_blob(split)
  if floor > 0 and #blob > 0 then
    local cut = below(blob)
    if cut > 0 then
      blob = string.sub(blob, cut * REC + 1)
      count = count - cut
    end
  end
  local stay, move = {}, {}
  local bit = 2 ^ level
  for i = 1, #blob, REC do
    local r = string.sub(blob, i, i + REC - 1)
    local stored = struct.unpack('<I4', r, 1)
    if math.floor(stored / 2 ^ (level - 8)) % 2 == 1 then
      move[#move + 1] = r
    else
      stay[#stay + 1] = r
    end
  end
  blobs[split] = table.concat(stay)
  blobs[split + bit] = table.concat(move)
  for _, s in ipairs({split, split + bit}) do
    if #blobs[s] == 0 then
      redis.call('DEL', ns .. ':s:' .. s)
    else
      redis.call('SET', ns .. ':s:' .. s, blobs[s])
    end
  end
  split = split + 1
  if split == bit then level = level + 1; split = 0 end
end
redis.call('HSET', ns .. ':h', 'level', level, 'split', split, 'count', count)
return {limit, first_seq}
"""
)

#: Forget one document (ARGV[2] its sequence number, ARGV[3] its id, ARGV[4] its lookup
#: records, ARGV[5] its cluster label if it joined one, ARGV[6] 1 if kept): only if its slot
#: still holds it. Returns 1 if it went.
_FORGET = (
    _COMMON
    + """
local q = tonumber(ARGV[2])
local r = record(q)
if not r then return 0 end
local len = struct.unpack('<I2', r, 1)
if string.sub(r, 3, 2 + len) ~= ARGV[3] then return 0 end
local bn = math.floor(q / BLOCK)
for _, prefix in ipairs({':b:', ':t:'}) do
  local key = ns .. prefix .. bn
  local old = redis.call('GET', key)
  if old then
    local lo, hi = struct.unpack('<I4I4', old, 1 + 4 * (q % BLOCK))
    local size = hi - lo
    local head = {}
    for s = 0, BLOCK do
      local at = struct.unpack('<I4', old, 1 + 4 * s)
      if s > q % BLOCK then at = at - size end
      head[#head + 1] = struct.pack('<I4', at)
    end
    local body = string.sub(old, HEAD + 1, lo) .. string.sub(old, hi + 1)
    if #body == 0 then
      redis.call('DEL', key)
    else
      local ttl = redis.call('PTTL', key)
      redis.call('SET', key, table.concat(head) .. body)
      if ttl > 0 then redis.call('PEXPIRE', key, ttl) end
    end
  end
end
local level, split, count = state()
local mine = struct.pack('<I4', q)
local keys = ARGV[4]
for i = 1, #keys, 5 do
  local k = string.sub(keys, i, i + 4)
  local skey = ns .. ':s:' .. shard_of(k, level, split)
  local blob = redis.call('GET', skey) or ''
  local at = 1
  while true do
    local found = string.find(blob, string.sub(k, 2, 5) .. mine, at, true)
    if not found then break end
    if (found - 1) % REC == 0 then
      blob = string.sub(blob, 1, found - 1) .. string.sub(blob, found + REC)
      count = count - 1
      if #blob == 0 then redis.call('DEL', skey) else redis.call('SET', skey, blob) end
      break
    end
    at = found + 1
  end
end
redis.call('HSET', ns .. ':h', 'count', count)
redis.call('DECR', ns .. ':n')
redis.call('HINCRBY', ns .. ':bn', bn .. 'n', -1)
if ARGV[6] == '1' then
  redis.call('DECR', ns .. ':kept')
  redis.call('HINCRBY', ns .. ':bn', bn .. 'k', -1)
end
if #ARGV[5] > 0 then
  if tonumber(redis.call('ZINCRBY', ns .. ':clusters', -1, ARGV[5])) <= 0 then
    redis.call('ZREM', ns .. ':clusters', ARGV[5])
  end
end
return 1
"""
)

#: Replace a shard's records (ARGV[2] the shard, ARGV[3] what it held when read, ARGV[4] its
#: new records, ARGV[5] how many records went) if it still holds what was read: 1 if so.
_SWEEP = (
    _COMMON
    + """
local key = ns .. ':s:' .. ARGV[2]
if (redis.call('GET', key) or '') ~= ARGV[3] then return 0 end
if #ARGV[4] == 0 then redis.call('DEL', key) else redis.call('SET', key, ARGV[4]) end
redis.call('HINCRBY', ns .. ':h', 'count', -tonumber(ARGV[5]))
return 1
"""
)

#: Count out the documents whose blocks expired (ARGV[2] the TTL, ARGV[3] now).
_TIDY = (
    _COMMON
    + """
advance(tonumber(ARGV[2]), tonumber(ARGV[3]))
return 1
"""
)

#: Save the count table (ARGV[2] its log position, ARGV[3] the table) unless a newer one is
#: saved, and drop the log it covers; either way the claim to save it lapses.
_SAVE = """
local ns = ARGV[1]
local pos = tonumber(ARGV[2])
redis.call('DEL', ns .. ':saving')
local saved = redis.call('GET', ns .. ':common')
if saved then
  local old = struct.unpack('<I8', saved)
  if old >= pos then return 0 end
end
redis.call('SET', ns .. ':common', struct.pack('<I8', pos) .. ARGV[3])
local base = tonumber(redis.call('GET', ns .. ':logbase') or '0')
if pos > base then
  redis.call('LTRIM', ns .. ':log', pos - base, -1)
  redis.call('SET', ns .. ':logbase', pos)
  local left = 0
  for _, r in ipairs(redis.call('LRANGE', ns .. ':log', 0, -1)) do left = left + #r end
  redis.call('SET', ns .. ':logbytes', left)
end
return 1
"""

#: A page of the log of stories from ARGV[2] (a position), at most ARGV[3] long: where the log
#: begins, the saved table's size, the log's bytes, how many stories follow, the stories.
_LOG_FN = """
local function log_page(after, limit)
  local base = tonumber(redis.call('GET', ns .. ':logbase') or '0')
  local size = redis.call('STRLEN', ns .. ':common')
  local logged = tonumber(redis.call('GET', ns .. ':logbytes') or '0')
  if after < base then return {base, size, logged, 0} end
  local page = redis.call('LRANGE', ns .. ':log', after - base, after - base + limit - 1)
  local out = {base, size, logged, #page}
  for _, r in ipairs(page) do out[#out + 1] = r end
  return out
end
"""

_LOG = "local ns = ARGV[1]\n" + _LOG_FN + "return log_page(tonumber(ARGV[2]), tonumber(ARGV[3]))\n"

#: A page of the log (:data:`_LOG`) and then the records of the keys in ARGV[5], with the
#: texts where ARGV[4] is '1' (:data:`_FIND`): a section's first reads in one round trip.
_LOG_FIND = (
    _COMMON
    + _LOG_FN
    + _FIND_FN
    + """
local out = log_page(tonumber(ARGV[2]), tonumber(ARGV[3]))
for _, v in ipairs(find(5, ARGV[4] == '1')) do out[#out + 1] = v end
return out
"""
)


#: The texts of documents from the text tier (ARGV[2..]: their sequence numbers): each one's
#: compressed text, or an empty string where the tier has none.
_TEXTS = (
    _COMMON
    + _TEXT_FN
    + """
local out = {}
for i = 2, #ARGV do out[#out + 1] = text_of(tonumber(ARGV[i])) end
return out
"""
)


class _Asked(NamedTuple):
    """A lookup's values (ids, exact-text hashes, buckets), the ids the section has read
    already and those it looks up, and the keys looked up."""

    values: tuple[list[str], list[int], list[BandKey]]
    known: dict[str, int]
    ids_wanted: list[str]
    id_keys: list[bytes]
    exact_keys: list[bytes]
    band_keys: list[bytes]

    @property
    def all_keys(self) -> list[bytes]:
        return self.id_keys + self.exact_keys + self.band_keys


class CompactRedisStore(RedisStore):
    """A compact :class:`~neardup.store.Store` on a Redis server (see the module)."""

    indexes_copies = False
    forms_ahead = True

    def __init__(
        self,
        url: str,
        *,
        namespace: str = "neardup",
        ttl: str | float | None = None,
        keep_text: bool = False,
    ) -> None:
        super().__init__(url, namespace=namespace, ttl=ttl)
        self._due: tuple[int, bool] | None = None  # (log position, snapshot due) last read
        #: the last sequence number given when this write section first read (see _WRITE)
        self._read_seq: int | None = None
        #: what the section's lookup will ask (expect), and what the log's read found of it
        self._expected: _Asked | None = None
        self._prefound: tuple[_Asked, dict[bytes, list[int]]] | None = None
        #: the compressed texts (b"": none) of the documents whose records a section read
        self._tier: dict[int, bytes] = {}
        self._find = self._r.register_script(_FIND)
        self._write = self._r.register_script(_WRITE)
        self._forget_script = self._r.register_script(_FORGET)
        self._sweep = self._r.register_script(_SWEEP)
        self._save = self._r.register_script(_SAVE)
        self._log_script = self._r.register_script(_LOG)
        self._log_find = self._r.register_script(_LOG_FIND)
        self._tidy_script = self._r.register_script(_TIDY)
        self._texts_script = self._r.register_script(_TEXTS)
        self.keep_text = keep_text or bool(self._call(self._r.exists, self._k("keep_text")))
        # what a section read: records by sequence number, and what must be unchanged
        self._records: dict[int, tuple[Entry, int, bool, bytes | None]] = {}
        self._by_id: dict[str, int] = {}
        self._bucket_seen: dict[bytes, int] = {}
        self._exact_seen: dict[int, int] = {}
        self._stale_records: set[bytes] = set()

    def _claim(self) -> None:
        """Say the namespace is compact (a new one), or refuse one of another kind."""
        self._call(self._r.set, self._k("format"), "compact", None, None, True)
        self._call(self._r.hsetnx, self._k("h"), "cap", CAP)
        self._call(self._r.hsetnx, self._k("h"), "level", LEVEL)
        if self.keep_text:
            self._call(self._r.set, self._k("keep_text"), "1")

    def check_config(self, fingerprint: Mapping[str, object]) -> None:
        self._claim()  # first: a namespace with settings and no layout is a full one
        super().check_config(fingerprint)

    # -- the atomic section ---------------------------------------------------------------

    def begin(self, *, write: bool = True) -> None:
        super().begin(write=write)
        self._records, self._bucket_seen, self._exact_seen = {}, {}, {}
        self._by_id = {}
        self._stale_records = set()
        self._read_seq = None
        self._expected = self._prefound = None
        self._tier = {}

    def _end(self) -> None:
        self._records, self._bucket_seen, self._exact_seen = {}, {}, {}
        self._by_id = {}
        self._stale_records = set()
        self._read_seq = None
        self._expected = self._prefound = None
        self._tier = {}
        super()._end()

    def commit(self) -> int:
        try:
            if not self._writing:
                raise NeardupError("commit outside an atomic section")
            if not self._pending:
                return 0
            ttl = "" if self.ttl is None else str(max(1, int(self.ttl)))
            bundles = [self._bundle(new) for new in self._pending]
            stale = b"".join(sorted(self._stale_records))
            read = "" if self._read_seq is None else str(self._read_seq)
            args = [
                self.ns, ttl, repr(time.time()), str(len(bundles)), stale, read, self.epoch,
                *bundles,
            ]  # fmt: skip
            added, _ = self._call(self._write, [], args)
            return int(added)
        finally:
            self._end()

    def _bundle(self, new: NewEntry) -> bytes:
        """What the write script needs to add one document (see _WRITE)."""
        e, sketch = new.entry, new.sketch
        indexed = sketch is not None and self.indexes(e)
        forms = new.forms
        blob = forms.blob if indexed and forms is not None else None
        adds = [_key("id", e.id), _key("cluster", e.cluster)]
        if e.copy_of is None:
            adds.append(_key("exact", new.text_key))
        if e.extends is not None and e.kept:
            adds.append(_key("extends", e.extends))
        if indexed and new.buckets:
            adds.append(_band_bytes(new.buckets))
        checks = b""
        n_checks = 0
        if sketch is not None:
            mine = _band(_bucket_ids(sketch))
            last = np.array([self._bucket_seen.get(raw, 0) for raw in mine], dtype="<u4")
            rows = np.empty((len(mine), 9), dtype=np.uint8)
            rows[:, :5] = np.frombuffer(b"".join(mine), dtype=np.uint8).reshape(-1, 5)
            rows[:, 5:] = last.view(np.uint8).reshape(-1, 4)
            checks, n_checks = rows.tobytes(), len(mine)
        seen = self._exact_seen.get(new.text_key, -1)
        extends = e.extends if e.extends in self._seen_unextended else None
        story = new.counts and sketch is not None
        text = b""
        if self.keep_text and forms is not None:
            text = forms.text
        rec = _record(e, new.text_key, new.counts, blob)
        log = _str(e.id) + forms.slots if story and forms is not None else b""
        label = e.cluster.encode("utf-8", "surrogatepass") if e.cluster != e.id else b""
        raw_id = e.id.encode("utf-8", "surrogatepass")
        return b"".join((
            struct.pack("<BdHH", int(e.kept), e.timestamp, sum(len(a) for a in adds) // 5, n_checks),
            *adds, checks,
            _key("exact", new.text_key), struct.pack("<q", seen),
            _key("extends", extends) if extends is not None else b"\0" * 5,
            b"\1" if extends is not None else b"\0",
            _key("id", e.id),
            struct.pack("<H", len(raw_id)), raw_id,
            struct.pack("<H", len(label)), label,
            struct.pack("<I", len(rec)), rec,
            struct.pack("<I", len(log)), log,
            struct.pack("<I", len(text)), text,
        ))  # fmt: skip

    def keep_texts(self) -> None:
        self.keep_text = True

    # -- reads ----------------------------------------------------------------------------

    def _lookup(self, keys: list[bytes]) -> dict[bytes, list[int]]:
        """The sequence numbers each key's records name (those of documents gone too), and
        the records of the documents still stored (kept for the section)."""
        if not keys:
            return {}
        if not self._in_section:  # what a section read is kept for it alone
            self._records, self._by_id = {}, {}
        texts = self._with_texts()
        flat = self._call(self._find, [], [self.ns, "1" if texts else "0", b"".join(keys)])
        return self._found(keys, flat, 0, texts)

    def _with_texts(self) -> bool:
        """Whether a lookup brings the texts of the documents it finds: in a section (what it
        reads is kept for the section) of a store that keeps them."""
        return self.keep_text and self._in_section

    def _found(
        self, keys: list[bytes], flat: list[Any], at: int, texts: bool
    ) -> dict[bytes, list[int]]:
        """What :data:`_FIND_FN` returned of ``keys`` (from ``flat[at]`` on; with the texts
        of the documents found where ``texts``)."""
        if self._writing and self._read_seq is None:
            self._read_seq = int(flat[at])
        found: dict[bytes, list[int]] = {}
        words: list[int] = np.frombuffer(bytes(flat[at + 1]), dtype="<u4").tolist()
        j = 0
        while j < len(words):
            i, m = words[j], words[j + 1]
            found[keys[i - 1]] = words[j + 2 : j + 2 + m]
            j += 2 + m
        at += 2
        while at < len(flat):
            q = int(flat[at])
            rec = _parse(q, bytes(flat[at + 1]))
            self._records[q] = rec
            self._by_id[rec[0].id] = q
            if texts:
                self._tier[q] = bytes(flat[at + 2])
            at += 3 if texts else 2
        return found

    def _docs(self, kind: str, values: Iterable[str]) -> dict[str, int]:
        """The sequence number of each of ``values`` (ids) the store has (an id whose record
        this section read already is not looked up again)."""
        known, wanted, keys = self._ids_asked(kind, values)
        return self._ids_found(known, wanted, keys, self._lookup(keys))

    def _ids_asked(
        self, kind: str, values: Iterable[str]
    ) -> tuple[dict[str, int], list[str], list[bytes]]:
        """What :meth:`_docs` knows already, and the values and keys it looks up."""
        out: dict[str, int] = {}
        wanted = list(dict.fromkeys(values))
        if kind == "id" and self._in_section:
            out = {v: self._by_id[v] for v in wanted if v in self._by_id}
            wanted = [v for v in wanted if v not in out]
        return out, wanted, [_key(kind, v) for v in wanted]

    def _ids_found(
        self,
        out: dict[str, int],
        wanted: list[str],
        keys: list[bytes],
        found: dict[bytes, list[int]],
    ) -> dict[str, int]:
        for v, k in zip(wanted, keys, strict=True):
            for q in found.get(k, ()):
                rec = self._records.get(q)
                if rec is not None and rec[0].id == v:
                    out[v] = q
        return out

    def entries(self, ids: Iterable[str]) -> dict[str, Entry]:
        with self._lock:
            return {i: self._records[q][0] for i, q in self._docs("id", ids).items()}

    def exact(self, text_keys: Iterable[int]) -> dict[int, str]:
        with self._lock:
            wanted = list(dict.fromkeys(text_keys))
            keys = [_key("exact", k) for k in wanted]
            return self._exact_found(wanted, keys, self._lookup(keys))

    def _exact_found(
        self, wanted: list[int], keys: list[bytes], found: dict[bytes, list[int]]
    ) -> dict[int, str]:
        out: dict[int, str] = {}
        for k, raw in zip(wanted, keys, strict=True):
            alive = sorted(q for q in found.get(raw, ()) if q in self._records)
            alive = [q for q in alive if self._records[q][1] == k]
            if alive:
                out[k] = self._records[alive[0]][0].id
            if self._writing:
                self._exact_seen[k] = alive[0] if alive else 0
        return out

    def buckets(self, keys: Iterable[BandKey]) -> dict[BandKey, list[tuple[int, str, float]]]:
        with self._lock:
            wanted = list(dict.fromkeys(keys))
            raws = _band(wanted)
            return self._buckets_found(wanted, raws, self._lookup(raws))

    def _buckets_found(
        self, wanted: list[BandKey], raws: list[bytes], found: dict[bytes, list[int]]
    ) -> dict[BandKey, list[tuple[int, str, float]]]:
        out: dict[BandKey, list[tuple[int, str, float]]] = {}
        for bk, raw in zip(wanted, raws, strict=True):
            seqs = sorted(set(found.get(raw, ())))
            if self._writing:
                self._bucket_seen[raw] = seqs[-1] if seqs else 0
            members = []
            for q in seqs:
                rec = self._records.get(q)
                if rec is None or rec[3] is None:
                    self._stale_records.add(raw + struct.pack("<I", q))
                    continue
                members.append((q, rec[0].id, rec[0].timestamp))
            if members:
                out[bk] = members
        return out

    @staticmethod
    def _values(
        ids: Iterable[str], text_keys: Iterable[int], keys: Iterable[BandKey]
    ) -> tuple[list[str], list[int], list[BandKey]]:
        return list(dict.fromkeys(ids)), list(dict.fromkeys(text_keys)), list(dict.fromkeys(keys))

    def _asked(self, values: tuple[list[str], list[int], list[BandKey]]) -> _Asked:
        """What a lookup of ``values`` (:meth:`_values`) knows already and looks up."""
        known, ids_wanted, id_keys = self._ids_asked("id", values[0])
        exact_keys = [_key("exact", k) for k in values[1]]
        return _Asked(values, known, ids_wanted, id_keys, exact_keys, _band(values[2]))

    def expect(self, ids: Iterable[str], text_keys: Iterable[int], keys: Iterable[BandKey]) -> None:
        """The section's first read of the log reads these too (one round trip less)."""
        if self._in_section:
            self._expected = self._asked(self._values(ids, text_keys, keys))

    def lookup(
        self, ids: Iterable[str], text_keys: Iterable[int], keys: Iterable[BandKey]
    ) -> tuple[dict[str, Entry], dict[int, str], dict[BandKey, list[tuple[int, str, float]]]]:
        """The three reads by one script: their lookup keys together (or none, where the
        section's read of the log found them: :meth:`expect`)."""
        with self._lock:
            values = self._values(ids, text_keys, keys)
            prefound, self._expected, self._prefound = self._prefound, None, None
            if prefound is not None and prefound[0].values == values:
                asked, found = prefound
            else:
                asked = self._asked(values)
                found = self._lookup(asked.all_keys)
            seqs = self._ids_found(asked.known, asked.ids_wanted, asked.id_keys, found)
            entries = {i: self._records[q][0] for i, q in seqs.items()}
            exact = self._exact_found(asked.values[1], asked.exact_keys, found)
            return entries, exact, self._buckets_found(asked.values[2], asked.band_keys, found)

    def sketches(self, ids: Iterable[str]) -> dict[str, Stored]:
        with self._lock:
            found = self._docs("id", ids)
            texts = self._texts(list(found.values())) if self.keep_text else {}
            out: dict[str, Stored] = {}
            for i, q in found.items():
                blob = self._records[q][3]
                if blob is None:
                    continue
                c = decode(blob)
                if q in texts:
                    c = dataclasses.replace(c, page_text=texts[q])
                out[i] = c
            return out

    def _texts(self, seqs: list[int]) -> dict[int, str]:
        """The texts of these documents from the text tier."""
        asked = [q for q in seqs if q not in self._tier]
        raws = (
            dict(zip(asked, self._call(self._texts_script, [], [self.ns, *asked]), strict=True))
            if asked
            else {}
        )
        out = {}
        for q in seqs:
            raw = self._tier.get(q) if q in self._tier else raws[q]
            if raw:
                out[q] = zlib.decompress(raw).decode("utf-8", "surrogatepass")
        return out

    def texts(self, ids: Iterable[str]) -> dict[str, str]:
        with self._lock:
            found = self._docs("id", ids)
            tier = self._texts(list(found.values())) if self.keep_text else {}
            out: dict[str, str] = {}
            for i, q in found.items():
                if q in tier:
                    out[i] = tier[q]
                elif (blob := self._records[q][3]) is not None:
                    short = decode(blob).short_text
                    if short:
                        out[i] = short
            return out

    def extended(self, ids: Iterable[str]) -> set[str]:
        with self._lock:
            wanted = list(dict.fromkeys(ids))
            keys = [_key("extends", i) for i in wanted]
            found = self._lookup(keys)
            out = set()
            for i, k in zip(wanted, keys, strict=True):
                for q in found.get(k, ()):
                    rec = self._records.get(q)
                    if rec is not None and rec[0].extends == i and rec[0].kept:
                        out.add(i)
            if self._writing:
                self._seen_unextended.update(i for i in wanted if i not in out)
            return out

    def log(self, after: int, limit: int) -> tuple[int, list[str], bool]:
        page = self.log_stories(after, limit)
        return page.position, [i for i, _ in page.stories], page.done

    def log_stories(self, after: int, limit: int, skip: Container[str] = ()) -> LogPage:
        expected, self._expected = self._expected, None
        if expected is not None and self._in_section:  # and the lookup the section expects
            keys, texts = expected.all_keys, self._with_texts()
            args = [self.ns, after, limit, "1" if texts else "0", b"".join(keys)]
            flat = self._call(self._log_find, [], args)
            self._prefound = (expected, self._found(keys, flat, 4 + int(flat[3]), texts))
        else:
            flat = self._call(self._log_script, [], [self.ns, after, limit])
        if after < int(flat[0]):
            return LogPage(after, [], False, behind=True)
        stories = []
        for raw in flat[4 : 4 + int(flat[3])]:
            doc_id, at = _read_str(bytes(raw), 0)
            s = str(doc_id)
            stories.append((s, NO_SLOTS if s in skip else decode_slots(bytes(raw)[at:])))
        # read with the page: what snapshot_due asks next, at the page's end
        self._due = (after + len(stories), self._is_due(flat[1], flat[2]))
        return LogPage(after + len(stories), stories, len(stories) < limit)

    @staticmethod
    def _is_due(size: Any, logged: Any) -> bool:
        return int(logged or 0) >= max(LOG_BYTES, int(size or 0) // LOG_SHARE)

    def snapshot_due(self, position: int, saved: int) -> bool:
        due, self._due = self._due, None
        if due is not None and due[0] == position:  # as the log's last page found them
            return due[1]
        pipe = self._r.pipeline(transaction=False)
        pipe.strlen(self._k("common"))
        pipe.get(self._k("logbytes"))
        return self._is_due(*self._call(pipe.execute))

    def save_common(self, position: int, table: bytes) -> None:
        self._call(self._save, [], [self.ns, position, table])

    # -- management -----------------------------------------------------------------------

    def _forget(self, ids: list[str]) -> int:
        found = self._docs("id", ids)
        n = 0
        for doc_id, q in found.items():
            e, text_key, _, _ = self._records[q]
            keys = [_key("id", doc_id), _key("cluster", e.cluster)]
            if e.copy_of is None:
                keys.append(_key("exact", text_key))
            if e.extends is not None and e.kept:
                keys.append(_key("extends", e.extends))
            label = e.cluster if e.cluster != e.id else ""
            args = [
                self.ns, q, doc_id.encode("utf-8", "surrogatepass"), b"".join(keys),
                label.encode("utf-8", "surrogatepass"), "1" if e.kept else "0",
            ]  # fmt: skip
            n += int(self._call(self._forget_script, [], args))
        return n

    def delete(self, doc_id: str) -> bool:
        with self._lock:
            return self._forget([doc_id]) > 0

    def prune(self, before: float) -> int:
        with self._lock:
            blocks = self._call(self._r.zrangebyscore, self._k("bts"), "-inf", f"({before!r}")
            n = 0
            for raw in blocks:
                b = int(raw)
                gone = [rec[0].id for q, rec in self._block(b).items() if rec[0].timestamp < before]
                if gone:
                    n += self._forget(gone)
                alive = self._block(b)
                if alive:
                    earliest = min(r[0].timestamp for r in alive.values())
                    self._call(self._r.zadd, self._k("bts"), {str(b): earliest})
                else:  # the block went with its last document
                    pipe = self._r.pipeline(transaction=True)
                    pipe.zrem(self._k("bts"), str(b))
                    pipe.zrem(self._k("bw"), str(b))
                    pipe.hdel(self._k("bn"), f"{b}n", f"{b}k")
                    self._call(pipe.execute)
            return n

    def _block(self, b: int) -> dict[int, tuple[Entry, int, bool, bytes | None]]:
        """The records of one block."""
        raw = self._call(self._r.get, self._k("b", b))
        out = {}
        if raw:
            offs = struct.unpack_from(f"<{BLOCK + 1}I", raw)
            if offs[0] != _HEAD or offs[-1] != len(raw) or list(offs) != sorted(offs):
                raise NeardupError(f"block {self._k('b', b)} is damaged (its offsets)")
            for s in range(BLOCK):
                if offs[s + 1] > offs[s]:
                    q = b * BLOCK + s
                    out[q] = _parse(q, bytes(raw[offs[s] : offs[s + 1]]))
        return out

    def reclaim(self, *, rewrite: bool = False) -> None:
        """Drop the lookup records of forgotten documents (a walk of every shard), then let
        Redis give freed memory back to the machine."""
        with self._lock:
            alive: dict[int, set[int]] = {}
            for keys in self._scan(f"{self.ns}:s:*".encode()):
                for key in keys:
                    shard = key.rsplit(b":", 1)[1].decode()
                    blob = self._call(self._r.get, key) or b""
                    recs = np.frombuffer(blob, dtype=np.uint8).reshape(-1, RECORD)
                    seqs = recs[:, 4:8].copy().view("<u4").ravel().astype(np.int64)
                    keep = np.ones(len(seqs), dtype=np.bool_)
                    for i, q in enumerate(seqs.tolist()):
                        b = q // BLOCK
                        if b not in alive:
                            alive[b] = set(self._block(b))
                        keep[i] = q in alive[b]
                    if not keep.all():
                        self._call(
                            self._sweep, [],
                            [self.ns, shard, blob, recs[keep].tobytes(), int((~keep).sum())],
                        )  # fmt: skip
        super().reclaim(rewrite=rewrite)

    def _tidy(self) -> None:
        if self.ttl is not None:
            self._call(self._tidy_script, [], [self.ns, str(max(1, int(self.ttl))), time.time()])

    def clusters(self, limit: int = 100, offset: int = 0) -> list[tuple[str, int]]:
        """Clusters with members besides their kept document first (largest first), then
        the rest, one document each, by label (a walk of the store)."""
        with self._lock:
            self._tidy()
            joined = [
                (t.decode("utf-8", "surrogatepass") if isinstance(t, bytes) else str(t), int(s))
                for t, s in self._call(self._r.zrevrange, self._k("clusters"), 0, -1, True)
            ]
            roots = self._docs("id", [label for label, _ in joined])
            sized = sorted(
                ((label, n + (label in roots)) for label, n in joined if n > 0),
                key=lambda x: (-x[1], x[0]),
            )
            if offset + limit <= len(sized):
                return sized[offset : offset + limit]
            labelled = {label for label, _ in sized}
            alone = sorted(
                rec[0].id
                for b in self._every_block()
                for rec in self._block(b).values()
                if rec[0].kept and rec[0].cluster == rec[0].id and rec[0].id not in labelled
            )
            return (sized + [(label, 1) for label in alone])[offset : offset + limit]

    def _every_block(self) -> list[int]:
        return sorted(
            int(k.rsplit(b":", 1)[1])
            for keys in self._scan(f"{self.ns}:b:*".encode())
            for k in keys
        )

    def members(self, cluster: str) -> list[Entry]:
        with self._lock:
            found = self._lookup([_key("cluster", cluster)])
            out = [
                self._records[q][0]
                for q in set(found.get(_key("cluster", cluster), ()))
                if q in self._records and self._records[q][0].cluster == cluster
            ]
            return sorted(out, key=lambda e: e.seq)

    def stats(self, *, full: bool = False) -> dict[str, object]:
        with self._lock:
            self._tidy()
            pipe = self._r.pipeline(transaction=False)
            for name in ("n", "kept"):
                pipe.get(self._k(name))
            pipe.zrange(self._k("bts"), 0, 0, False, True)
            pipe.hget(self._k("h"), "count")
            n, kept, oldest, records = self._call(pipe.execute)
            newest = None
            last = self._call(self._r.zrange, self._k("bw"), -1, -1)
            if last:
                recs = self._block(int(last[0]))
                newest = max((r[0].timestamp for r in recs.values()), default=None)
            info = self._call(self._r.info, "memory")
            docs = int(n or 0)
            out: dict[str, object] = {
                "store": self.url,
                "layout": "compact",
                "documents": docs,
                "kept": int(kept or 0),
                "duplicates": docs - int(kept or 0),
                # LSH bucket entries, and a record a document for its id and its cluster
                "lookup_records": int(records or 0),
                "oldest": oldest[0][1] if oldest else None,
                "newest": newest,
                "keeps_text": self.keep_text,
            }
            if full:
                keys, size = self._footprint()
                out.update(
                    keys=keys, bytes=size, bytes_per_document=round(size / docs) if docs else None
                )
            out["redis_used_memory"] = info.get("used_memory")
            return out

    def _check(self) -> list[str]:
        problems: list[str] = []
        config = self._call(self._r.get, self._k("config"))
        if config is None:
            return [f"no neardup store under namespace {self.ns!r} (no key {self._k('config')})"]
        try:
            if not isinstance(json.loads(config), dict):
                raise ValueError("not an object")
        except ValueError:
            problems.append(f"{self._k('config')} is not the JSON of sketch settings")
        bad = docs = 0
        for b in self._every_block():
            try:
                for rec in self._block(b).values():
                    docs += 1
                    if rec[3] is not None:
                        decode(rec[3])
            except Exception:  # any damage shows as some error of the parser
                bad += 1
        if bad:
            problems.append(f"{bad:,} blocks of documents do not parse")
        records = broken = 0
        for keys in self._scan(f"{self.ns}:s:*".encode()):
            for key in keys:
                size = self._call(self._r.strlen, key)
                if size % RECORD:
                    broken += 1
                records += size // RECORD
        counted = int(self._call(self._r.hget, self._k("h"), "count") or 0)
        if broken:
            problems.append(f"{broken:,} lookup shards are not whole records")
        elif records != counted:
            problems.append(f"the lookup table counts {counted:,} records but holds {records:,}")
        n = int(self._call(self._r.get, self._k("n")) or 0)
        if self.ttl is None and not bad and n != docs:
            problems.append(f"{self._k('n')} says {n:,} documents, the blocks hold {docs:,}")
        return problems


def _bucket_ids(sketch: Sketch) -> list[int]:
    from ..engine import bucket_keys

    return bucket_keys(sketch)


#: the namespace's format mark (KEYS[1]) raised to ARGV[1] where it is lower or missing;
#: what the mark was (as it was, where it is not a number)
_MARK = """
local found = redis.call('GET', KEYS[1])
local n = tonumber(found or '0')
if n and n < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) end
return found
"""


#: The layout of a namespace (KEYS[1] its ``format`` mark, KEYS[2] its settings), read and,
#: for a new namespace to be compact (ARGV[1] '1'), claimed in one step: a namespace with
#: settings and no mark is full (written before compact stores, or with ``format=full``;
#: nil), a new one is claimed with SET. Read apart, a process opening a new namespace could
#: find no mark, then the settings of another that claimed it meanwhile, and take it for a
#: full one.
_LAYOUT = """
local marked = redis.call('GET', KEYS[1])
if marked then return marked end
if ARGV[1] ~= '1' or redis.call('EXISTS', KEYS[2]) == 1 then return false end
redis.call('SET', KEYS[1], 'compact')
return 'compact'
"""


def open_redis(
    url: str, namespace: str, query: Mapping[str, list[str]], *, existing: bool = False
) -> RedisStore:
    """The store in a Redis namespace: compact unless the namespace was written before
    compact stores, or a new one is asked for with ``format=full``. With ``existing``, a
    namespace that holds no store (no settings: no Deduper ever opened it) is refused
    before anything is written to it."""
    fmt = (query.get("format") or [""])[0]
    if fmt not in ("", "compact", "full"):
        raise ConfigError(f"unknown store format {fmt!r}: use format=compact or format=full")
    keep_text = (query.get("keep_text") or ["0"])[0].lower() in ("1", "true", "yes")
    probe = RedisStore(url, namespace=namespace)
    try:
        if existing and not probe._call(probe._r.exists, probe._k("config")):
            raise StoreError(
                f"no neardup store at {redacted_url(url)} under namespace {namespace!r} (no "
                f"key {probe._k('config')}): check the URL and its namespace"
            )
        # refuse a namespace a newer neardup wrote, else mark it with this version's format
        # (raised at once, never lowered: a newer process may mark it at the same moment)
        found = probe._call(probe._r.eval, _MARK, 1, probe._k("version"), FORMAT)
        format_found(found, probe.url)
        # a new compact namespace is claimed at once, so that processes opening it at the
        # same moment agree, whichever of them writes its settings first
        claim = "0" if fmt == "full" else "1"
        marked = probe._call(
            probe._r.eval, _LAYOUT, 2, probe._k("format"), probe._k("config"), claim
        )
    finally:
        probe.close()
    layout = marked.decode() if marked else "full"  # used before compact stores: full
    if fmt and fmt != layout:
        raise ConfigError(
            f"store {redacted_url(url)} (namespace {namespace}) is a {layout} store, not "
            f"format={fmt}: leave format out, or use another namespace"
        )
    if layout == "full":
        return RedisStore(url, namespace=namespace)
    return CompactRedisStore(url, namespace=namespace, keep_text=keep_text)


def redacted_url(url: str) -> str:
    from . import redacted

    return redacted(url)
