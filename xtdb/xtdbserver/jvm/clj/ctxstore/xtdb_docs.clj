;; The document store of a ctxstore cluster node: XTDB 1.24.5's JDBC
;; document store (xtdb.jdbc, PostgreSQL), with two changes.
;;
;; XTDB's JDBC store keeps a row per document event in tx_events, keyed by
;; content hash. Evicting a document overwrites every row of its hash with
;; the eviction marker; putting the same document again later adds a new
;; row with the document.
;;
;; 1. Reads: XTDB takes the rows of a hash in no defined order, so a
;;    document put back after an eviction may read as the marker (seen in
;;    the conformance case test-adding-back-evicted-document on
;;    PostgreSQL). Here the rows are read in event order, the latest wins.
;; 2. Evictions: every node writes the marker when it indexes the evict,
;;    so a node that indexes the log later (a new node, a rebuilt index)
;;    would overwrite the document put back after the eviction too, for the
;;    whole cluster. Here a marker overwrites only the rows older than the
;;    transaction being indexed (the first tx after this node's latest
;;    completed one: XTDB commits the document store before the index), and
;;    adds no row of its own.
;; Other writes are XTDB's.
(ns ctxstore.xtdb-docs
  (:require [clojure.string :as str]
            [xtdb.codec :as c]
            [xtdb.db :as db]
            [xtdb.document-store :as ds]
            [xtdb.io :as xio]
            [xtdb.api :as xt]
            [xtdb.jdbc :as j]
            [juxt.clojars-mirrors.nextjdbc.v1v2v674.next.jdbc :as jdbc]
            [juxt.clojars-mirrors.nextjdbc.v1v2v674.next.jdbc.result-set :as jdbcr]
            [juxt.clojars.mirrors.nippy.v3v4v2.taoensso.nippy :as nippy]))

(defn- latest-docs
  "hash -> document, from the latest docs event of each hash in ids."
  [pool dialect ids]
  (xio/with-nippy-thaw-all
    (reduce (fn [acc batch]
              (let [sql (str "SELECT EVENT_KEY, V FROM tx_events WHERE TOPIC = 'docs' AND EVENT_KEY IN ("
                             (str/join ", " (repeat (count batch) "?"))
                             ") ORDER BY EVENT_OFFSET")
                    rows (jdbc/execute! pool (into [sql] (map (comp str c/new-id)) batch)
                                        {:builder-fn jdbcr/as-unqualified-lower-maps})]
                (reduce (fn [acc {:keys [event_key v]}]
                          (assoc acc (c/new-id (c/hex->id-buffer event_key)) (j/<-blob v dialect)))
                        acc rows)))
            {}
            (partition-all 100 ids))))

(defn- indexing-tx-offset
  "The event offset of the tx this node indexes now: the first tx after its
  latest completed one (tx ids are event offsets in a JDBC log)."
  [pool index-store]
  (let [latest (or (::xt/tx-id (db/latest-completed-tx index-store)) -1)
        row (jdbc/execute-one! pool ["SELECT MIN(EVENT_OFFSET) AS T FROM tx_events WHERE TOPIC = 'txs' AND EVENT_OFFSET > ?" latest]
                               {:builder-fn jdbcr/as-unqualified-lower-maps})]
    (or (some-> (:t row) long) Long/MAX_VALUE)))

(defrecord LatestFirstDocumentStore [pool dialect index-store writes]
  db/DocumentStore
  (submit-docs [_ id-and-docs]
    (let [{markers true docs false} (group-by (comp boolean c/evicted-doc? val) id-and-docs)]
      (when (seq docs) (db/submit-docs writes docs))
      (when (seq markers)
        (let [before (indexing-tx-offset pool index-store)]
          (jdbc/with-transaction [tx pool]
            (doseq [[id marker] (sort-by (comp str key) markers)]
              (jdbc/execute! tx ["UPDATE tx_events SET V = ?, COMPACTED = 1 WHERE TOPIC = 'docs' AND EVENT_KEY = ? AND EVENT_OFFSET < ?"
                                 (nippy/freeze marker) (str id) before])))))))
  (fetch-docs [_ ids] (latest-docs pool dialect ids)))

(defn ->document-store
  "Configured like xtdb.jdbc/->document-store:
  {:xtdb/module ctxstore.xtdb-docs/->document-store
   :connection-pool :xtdb.jdbc/connection-pool}"
  {:xtdb.system/deps {:connection-pool `j/->connection-pool
                      :document-cache 'xtdb.cache/->cache
                      :index-store :xtdb/index-store}}
  [{{:keys [pool dialect]} :connection-pool, :keys [document-cache index-store] :as opts}]
  (ds/->cached-document-store
   (assoc opts
          :document-cache document-cache
          :document-store (->LatestFirstDocumentStore pool dialect index-store (j/->JdbcDocumentStore pool dialect)))))
