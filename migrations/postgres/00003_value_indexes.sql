-- The distinct values of the fields ctxstore lists (store.ValueLister:
-- the sessions that have context commits, the sessions a proxy
-- recorded), without reading every version that holds them: an index
-- of each one's string values in bytewise order, which the backend walks
-- one value at a time (bitemporal/postgres, values.go), and an index of
-- the documents where it is an array, whose elements that index does
-- not hold (the backend reads every matching document when there is
-- one). The expressions are those values.go writes, so the planner
-- matches them.

-- +goose Up
CREATE INDEX docs_value_session ON docs (((doc ->> 'session') COLLATE "C")) WHERE jsonb_typeof(doc -> 'session') = 'string';
CREATE INDEX docs_array_session ON docs (id) WHERE jsonb_typeof(doc -> 'session') = 'array';
CREATE INDEX docs_value_session_id ON docs (((doc ->> 'session_id') COLLATE "C")) WHERE jsonb_typeof(doc -> 'session_id') = 'string';
CREATE INDEX docs_array_session_id ON docs (id) WHERE jsonb_typeof(doc -> 'session_id') = 'array';

-- +goose Down
DROP INDEX docs_value_session;
DROP INDEX docs_array_session;
DROP INDEX docs_value_session_id;
DROP INDEX docs_array_session_id;
