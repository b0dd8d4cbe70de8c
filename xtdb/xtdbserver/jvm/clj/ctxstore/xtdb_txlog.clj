;; The tx log of a ctxstore cluster node: XTDB 1.24.5's JDBC tx log
;; (xtdb.jdbc, PostgreSQL) with the node's poll of the log made
;; configurable. XTDB's JDBC log sleeps 100 ms whenever a poll finds
;; nothing new, so a node sees a transaction (its own included: a submit is
;; awaited through the same poll) 50 ms late on average; every context
;; call of ctxstore awaits its writes. Here the sleep is :poll-ms (default
;; 100 ms, XTDB's; at 10 ms an idle node asks PostgreSQL 100 times a
;; second, a cheap indexed query, which only pays where cores are idle:
;; docs/benchmarks.md). Everything else is XTDB's JdbcTxLog.
(ns ctxstore.xtdb-txlog
  (:require [xtdb.db :as db]
            [xtdb.jdbc :as j]
            [xtdb.system :as sys]
            [xtdb.tx.subscribe :as tx-sub])
  (:import (java.io Closeable)
           (java.time Duration)))

(defrecord PolledTxLog [inner ^Duration poll]
  db/TxLog
  (submit-tx [_ tx-events] (db/submit-tx inner tx-events))
  (submit-tx [_ tx-events opts] (db/submit-tx inner tx-events opts))
  (open-tx-log [_ after-tx-id opts] (db/open-tx-log inner after-tx-id opts))
  (subscribe [this after-tx-id f]
    (tx-sub/handle-polling-subscription this after-tx-id {:poll-sleep-duration poll} f))
  (latest-submitted-tx [_] (db/latest-submitted-tx inner))

  Closeable
  (close [_] (when (instance? Closeable inner) (.close ^Closeable inner))))

(defn ->tx-log
  "Configured like xtdb.jdbc/->tx-log, plus :poll-ms:
  {:xtdb/module ctxstore.xtdb-txlog/->tx-log
   :connection-pool :xtdb.jdbc/connection-pool :poll-ms 100}"
  {::sys/args {:fetch-size {:default 1024, :spec ::sys/pos-int}
               :poll-ms {:default 100, :spec ::sys/pos-int
                         :doc "How long the node waits before polling the log again when it found nothing new"}}
   ::sys/deps {:connection-pool `j/->connection-pool}}
  [{:keys [poll-ms] :as opts}]
  (->PolledTxLog (j/->tx-log opts) (Duration/ofMillis poll-ms)))
