-- Documents stored as SQLite's binary JSON, JSONB
-- (docs/architecture.md "The SQLite backend"). A text document is parsed whole
-- by every json_extract or -> that reads inside it: the portable query's
-- projection of a file's `source` (an object, so not in the field index)
-- parsed the file's whole content to find it. JSONB carries the size of
-- every element in its header, so a read of one field skips over the
-- others. Readers into Go take json(doc), which gives back the stored text
-- byte for byte: the RFC 8785 canonical JSON whose SHA-256 is the hash
-- (docs.hash is unchanged). The column keeps its declared type TEXT, whose
-- affinity leaves a BLOB as it is; the search triggers and the search_src
-- view read JSONB as they read text.

-- +goose Up
UPDATE docs SET doc = jsonb(doc) WHERE typeof(doc) = 'text';

-- +goose Down
UPDATE docs SET doc = json(doc) WHERE typeof(doc) = 'blob';
