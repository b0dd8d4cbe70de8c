-- Long strings leave the field index (docs/architecture.md): a
-- string value of more than 2,048 bytes (store.MaxIDBytes, so every entity
-- id stays whole) is indexed as kind 'S' with only its first 64 characters;
-- the portable query narrows by that prefix and checks the document itself.
-- Same rule as bitemporal.stringField: length(CAST(v AS BLOB)) counts bytes,
-- substr() characters.

-- +goose Up
UPDATE fields SET kind = 'S', value = substr(value, 1, 64)
WHERE kind = 's' AND length(CAST(value AS BLOB)) > 2048;

-- +goose Down
CREATE TEMP TABLE long_fields AS SELECT DISTINCT doc, field FROM fields WHERE kind = 'S';
DELETE FROM fields WHERE kind = 'S';
INSERT INTO fields (doc, field, kind, value)
SELECT l.doc, l.field, 's', j.value
FROM long_fields l JOIN docs d ON d.id = l.doc, json_each(d.doc, '$."' || l.field || '"') j
WHERE j.type = 'text' AND length(CAST(j.value AS BLOB)) > 2048;
DROP TABLE long_fields;
