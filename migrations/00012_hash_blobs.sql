-- Content hashes as their 32 bytes (docs/architecture.md "The
-- SQLite backend"): docs.hash held the SHA-256 as 64 characters of lowercase hex,
-- in the row and again in its unique index; now the bytes (unhex), half the
-- size in both. Hashes enter and leave SQL as hex (unhex(?), lower(hex())),
-- so every read answers as before. The column keeps its declared type TEXT,
-- whose affinity leaves a BLOB as it is.

-- +goose Up
UPDATE docs SET hash = unhex(hash) WHERE typeof(hash) = 'text';

-- +goose Down
UPDATE docs SET hash = lower(hex(hash)) WHERE typeof(hash) = 'blob';
