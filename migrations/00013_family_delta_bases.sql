-- Documents compressed against another entity's row
-- (docs/architecture.md "The SQLite backend"): since 00011 a new version could
-- be a delta against an earlier version of its own entity; now an
-- entity's first version may be one against the latest row of the same
-- document type stored whole (a session's context commits, toolcalls and
-- chat turns resemble each other, each a new entity). Reads are unchanged:
-- they pass the row docs.base names, whatever its entity. An evict stores
-- another entity's row compressed against an evicted row whole first
-- (bitemporal/write.go, evictSQL). Rows written before stay as they are.
-- Up changes no row: the version itself is what matters, so that a
-- ctxstore that does not know these bases (and would evict a base from
-- under another entity's row) refuses the store. Down stores every row
-- compressed against another entity's row whole.

-- +goose Up
SELECT 1;

-- +goose Down
UPDATE docs SET doc = ctxs_pack(ctxs_doc(doc, (SELECT b.doc FROM docs b WHERE b.id = docs.base))), base = NULL
WHERE base IS NOT NULL AND eid <> (SELECT b.eid FROM docs b WHERE b.id = docs.base);
