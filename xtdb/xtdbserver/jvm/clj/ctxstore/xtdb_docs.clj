;; The document store of a ctxstore cluster node: XTDB 1.24.5's JDBC
;; document store (xtdb.jdbc, PostgreSQL), with one change to its reads.
;;
;; XTDB's JDBC store keeps a row per document event in tx_events. Evicting
;; a document overwrites every row of its content hash with the eviction
;; marker; putting the same document again later adds a new row with the
;; document. XTDB's read takes the rows of a hash in no defined order, so
;; a document put back after an eviction may read as the marker (seen in
;; the conformance case test-adding-back-evicted-document on PostgreSQL).
;; Here the rows are read in event order and the latest wins: the marker
;; after an eviction, the document once it is put back. Writes are XTDB's.
(ns ctxstore.xtdb-docs
  (:require [clojure.string :as str]
            [xtdb.codec :as c]
            [xtdb.db :as db]
            [xtdb.document-store :as ds]
            [xtdb.io :as xio]
            [xtdb.jdbc :as j]
            [juxt.clojars-mirrors.nextjdbc.v1v2v674.next.jdbc :as jdbc]
            [juxt.clojars-mirrors.nextjdbc.v1v2v674.next.jdbc.result-set :as jdbcr]))

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

(defrecord LatestFirstDocumentStore [pool dialect writes]
  db/DocumentStore
  (submit-docs [_ id-and-docs] (db/submit-docs writes id-and-docs))
  (fetch-docs [_ ids] (latest-docs pool dialect ids)))

(defn ->document-store
  "Configured like xtdb.jdbc/->document-store:
  {:xtdb/module ctxstore.xtdb-docs/->document-store
   :connection-pool :xtdb.jdbc/connection-pool}"
  {:xtdb.system/deps {:connection-pool `j/->connection-pool
                      :document-cache 'xtdb.cache/->cache}}
  [{{:keys [pool dialect]} :connection-pool, :keys [document-cache] :as opts}]
  (ds/->cached-document-store
   (assoc opts
          :document-cache document-cache
          :document-store (->LatestFirstDocumentStore pool dialect (j/->JdbcDocumentStore pool dialect)))))
