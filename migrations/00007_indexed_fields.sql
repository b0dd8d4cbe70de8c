-- The field index holds only the fields queries filter on
-- (docs/architecture.md "The SQLite backend"). Until now every top-level scalar
-- field of every document version had rows in fields (about 16 per
-- version: hashes, counters, times, references nothing filters on), which
-- with the table's two indexes was a third of a long session's store.
-- indexed_fields names the fields that keep rows; a predicate on any other
-- field is evaluated on the document itself (JSONB), so the portable query
-- answers exactly what it answered before, the candidates coming from the
-- predicates on indexed fields. A row '*' means every field is indexed.
--
-- The fields are those ctxstore's own queries filter on (Where, not
-- OrderBy or Find, which read the document): type, session_id, call,
-- n (chat turns), session and depth (conversation commits), sha256
-- (conversation content), nickname, name_keys and link_keys (notes). A
-- later migration that adds a field fills its rows from docs.

-- +goose Up
CREATE TABLE indexed_fields (
    field TEXT PRIMARY KEY
) WITHOUT ROWID;
INSERT INTO indexed_fields (field) VALUES
    ('type'), ('session_id'), ('call'), ('n'), ('session'), ('depth'),
    ('sha256'), ('nickname'), ('name_keys'), ('link_keys');
DELETE FROM fields WHERE field NOT IN (SELECT field FROM indexed_fields);

-- +goose Down
-- Every top-level scalar field again, as bitemporal.fieldRows writes them
-- (array elements one row each; booleans 1 and 0; numbers as reals; a
-- string of more than 2,048 bytes as kind 'S' with its first 64
-- characters, as in 00004).
INSERT INTO fields (doc, field, kind, value)
SELECT d.id, t.key,
    CASE WHEN e.type = 'text' AND length(CAST(e.value AS BLOB)) > 2048 THEN 'S'
         WHEN e.type = 'text' THEN 's'
         WHEN e.type IN ('true', 'false') THEN 'b'
         ELSE 'n' END,
    CASE WHEN e.type = 'text' AND length(CAST(e.value AS BLOB)) > 2048 THEN substr(e.value, 1, 64)
         WHEN e.type IN ('integer', 'real') THEN CAST(e.value AS REAL)
         ELSE e.value END
FROM docs d, json_each(d.doc) t, json_each(d.doc, '$."' || t.key || '"') e
WHERE t.key NOT IN (SELECT field FROM indexed_fields)
  AND typeof(e.key) <> 'text'
  AND e.type IN ('text', 'integer', 'real', 'true', 'false');
DROP TABLE indexed_fields;
