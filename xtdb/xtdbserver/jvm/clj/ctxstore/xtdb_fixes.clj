;; Corrections to XTDB 1.24.5 itself, applied when the node ctxstore starts
;; loads its namespaces (ctxstore.xtdb-http requires this one before it
;; starts the node). Each replaces one var of XTDB by a function with the
;; same contract; docs/xtdb-cluster.md says what each corrects and how it
;; was found.
;;
;; 1. An ascending entity history read from a valid time before the
;;    entity's first version answers () when the entity's keys are the last
;;    of the bitemporal index (xtdb.kv.index-store/all-keys-in-prefix). The
;;    ascending read walks the entity's keys backwards (valid times are
;;    stored reversed): it seeks just past the start and steps back. When
;;    nothing in the index sorts after the start, XTDB looks for the start
;;    from the start key itself, which finds nothing when every version of
;;    the entity is later than the start (a later time sorts first), so
;;    the read ends before it began. RocksDB keeps the bitemporal index in a
;;    column family of its own, so the entity whose id hash is the largest
;;    in the index is affected; the in-memory store keeps every index in
;;    one sorted map, where other indexes follow, and is not. The
;;    correction finds the start from the first key of the entity instead.
;;    Seen as the cluster's intermittent empty history
;;    (docs/xtdb-cluster.md).
(ns ctxstore.xtdb-fixes
  (:require [xtdb.kv :as kv]
            [xtdb.kv.index-store]
            [xtdb.memory :as mem])
  (:import (clojure.lang MapEntry)
           (org.agrona DirectBuffer)))

(defn keys-in-prefix
  "The keys (or [key value] entries, with :entries?) of iterator i that
  share the first prefix-length bytes of seek-k, from seek-k on: forwards,
  or with :reverse? backwards from the last key that sorts before every key
  greater than seek-k's range. XTDB 1.24.5's all-keys-in-prefix contract,
  with the backward start found when nothing sorts after seek-k."
  ([i ^DirectBuffer prefix] (keys-in-prefix i prefix (.capacity prefix) {}))
  ([i seek-k prefix-length] (keys-in-prefix i seek-k prefix-length {}))
  ([i ^DirectBuffer seek-k prefix-length {:keys [entries? reverse?]}]
   (letfn [(in-prefix? [k] (and k (mem/buffers=? seek-k k prefix-length)))
           (element [k]
             (if entries?
               (MapEntry/create (mem/copy-to-unpooled-buffer k) (mem/copy-to-unpooled-buffer (kv/value i)))
               (mem/copy-to-unpooled-buffer k)))
           (walk [k]
             (lazy-seq
              (when (in-prefix? k)
                (cons (element k) (walk (if reverse? (kv/prev i) (kv/next i)))))))
           (last-of-prefix []
             ;; Nothing sorts after seek-k's range, so the backward start is
             ;; the last key of the prefix: walk to it from the prefix's first.
             (loop [k (kv/seek i (mem/copy-buffer seek-k prefix-length))]
               (when (in-prefix? k)
                 (let [k (mem/copy-to-unpooled-buffer k)
                       next-k (kv/next i)]
                   (if (in-prefix? next-k)
                     (recur next-k)
                     (kv/seek i k))))))
           (start []
             (if reverse?
               (if (kv/seek i (-> seek-k (mem/copy-buffer) (mem/inc-unsigned-buffer!)))
                 (kv/prev i)
                 (last-of-prefix))
               (kv/seek i seek-k)))]
     (lazy-seq (walk (start))))))

(alter-var-root #'xtdb.kv.index-store/all-keys-in-prefix (constantly keys-in-prefix))
