-- A put in one round trip: the document stored (once per content hash)
-- with its search units, and an open-ended write of its points, as
-- functions run by the server. Every statement is a round trip to the
-- server, and writers take turns on the clock row, so the round trips
-- inside a transaction bound every writer's throughput
-- (docs/benchmarks.md, "PostgreSQL backend").

-- +goose Up
-- +goose StatementBegin
-- ctxs_put_doc returns the docs.id of the document hashed p_hash, storing
-- it first with its search units when it is new. The units come from the
-- store (bitemporal/postgres, search.go), one per array position; for a
-- chat (p_chat) only the turns its previous stored version did not have
-- are kept (chats grow by appending turns).
CREATE FUNCTION ctxs_put_doc(p_hash bytea, p_ent bytea, p_body text, p_doc jsonb, p_chat boolean,
    u_ent bytea[], u_kind text[], u_session text[], u_part bigint[], u_title text[], u_body text[],
    u_title_words text[], u_body_words text[]) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v_id bigint;
    v_prev numeric := 0;
    v_tc jsonb;
BEGIN
    SELECT d.id INTO v_id FROM docs d WHERE d.hash = p_hash;
    IF FOUND THEN
        RETURN v_id;
    END IF;
    IF p_chat THEN
        SELECT d.doc -> 'turn_count' INTO v_tc FROM docs d WHERE d.ent = p_ent ORDER BY d.id DESC LIMIT 1;
        IF jsonb_typeof(v_tc) = 'number' THEN
            v_prev := v_tc::numeric;
        END IF;
    END IF;
    INSERT INTO docs (hash, ent, body, doc) VALUES (p_hash, p_ent, p_body, p_doc) RETURNING id INTO v_id;
    INSERT INTO search_units (doc, ent, kind, session, part, title, body, tsv)
    SELECT v_id, u.ent, u.kind, nullif(u.session, ''), u.part, u.title, u.body,
           setweight(to_tsvector('simple', u.tw), 'A') || setweight(to_tsvector('simple', u.bw), 'D')
    FROM unnest(u_ent, u_kind, u_session, u_part, u_title, u_body, u_title_words, u_body_words)
         AS u (ent, kind, session, part, title, body, tw, bw)
    WHERE NOT p_chat OR u.part >= v_prev;
    RETURN v_id;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- ctxs_write_open writes entity p_ent as document p_doc (NULL: a
-- tombstone) from valid time p_start until the next different version, in
-- transaction p_tx at time p_tt: at p_start, and at every later point
-- that continues the version visible at p_start (the same tx, time and
-- document; a tombstone has no continuation).
CREATE FUNCTION ctxs_write_open(p_ent bytea, p_start bigint, p_tx bigint, p_tt bigint, p_doc bigint)
    RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    vis record;
    r record;
    vts bigint[] := ARRAY[p_start];
    last_vt bigint;
BEGIN
    SELECT p.vt, p.tx_id, p.tx_time, p.doc INTO vis FROM points p
    WHERE p.ent = p_ent AND p.vt <= p_start AND p.tx_id <= p_tx
    ORDER BY p.vt DESC, p.tx_id DESC LIMIT 1;
    IF FOUND AND vis.doc IS NOT NULL THEN
        -- The winning point of each later valid time, until one that does
        -- not continue the visible version.
        FOR r IN SELECT p.vt, p.tx_id, p.tx_time, p.doc FROM points p
                 WHERE p.ent = p_ent AND p.vt > p_start ORDER BY p.vt, p.tx_id DESC LOOP
            CONTINUE WHEN last_vt IS NOT NULL AND r.vt = last_vt;
            last_vt := r.vt;
            EXIT WHEN r.tx_id <> vis.tx_id OR r.tx_time <> vis.tx_time OR r.doc IS DISTINCT FROM vis.doc;
            vts := vts || r.vt;
        END LOOP;
    END IF;
    INSERT INTO points (ent, vt, tx_id, tx_time, doc)
    SELECT p_ent, v, p_tx, p_tt, p_doc FROM unnest(vts) AS v
    ON CONFLICT (ent, vt, tx_id) DO UPDATE SET tx_time = EXCLUDED.tx_time, doc = EXCLUDED.doc;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION ctxs_write_open(bytea, bigint, bigint, bigint, bigint);
DROP FUNCTION ctxs_put_doc(bytea, bytea, text, jsonb, boolean, bytea[], text[], text[], bigint[], text[], text[], text[], text[]);
