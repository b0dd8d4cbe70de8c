;; ctxstore's HTTP front for a real XTDB 1.24.5 node.
;;
;; XTDB's own HTTP module (com.xtdb:xtdb-http-server) and its dependency
;; bundle are not served by the Maven Central this project can reach, so
;; ctxstore runs the released xtdb-core node behind this small server of its
;; own. It serves the subset of XTDB 1.x's REST API (under /_xtdb) that the
;; ctxstore driver uses, with the same paths, parameters and EDN answers:
;; every answer is the value the xtdb.api function returns, printed as EDN,
;; so bitemporal semantics are XTDB's own. Request bodies: submit-tx takes
;; XTDB's JSON tx-op form, query takes EDN. See docs/xtdb-semantics.md.
(ns ctxstore.xtdb-http
  (:require [clojure.data.json :as json]
            [clojure.edn :as edn]
            [clojure.instant :as instant]
            [clojure.string :as str]
            [ctxstore.xtdb-search :as search]
            [xtdb.api :as xt]
            [xtdb.codec :as c])
  (:import (com.sun.net.httpserver HttpExchange HttpHandler HttpServer)
           (java.io OutputStreamWriter Writer)
           (java.net InetSocketAddress URLDecoder)
           (java.time Duration)
           (java.util.concurrent Executors TimeoutException)
           (xtdb.api NodeOutOfSyncException)))

(defn- parse-params [^String q]
  (into {} (for [kv (str/split (or q "") #"&")
                 :when (seq kv)
                 :let [[k v] (str/split kv #"=" 2)]]
             [(URLDecoder/decode ^String k "UTF-8") (URLDecoder/decode ^String (or v "") "UTF-8")])))

(defn- ->date [s] (when s (instant/read-instant-date s)))
(defn- ->long [s] (when s (Long/parseLong s)))
(defn- ->bool [s] (= "true" s))

(defn- bad-request [msg data]
  (throw (ex-info msg (assoc data ::status 400))))

(defn- json->tx-op
  "XTDB's JSON tx-op form: [op arg...], valid times as RFC 3339 strings. A
  null valid time is dropped, as XTDB 1.24.5's own JSON reader does."
  [op]
  (when-not (and (vector? op) (string? (first op)))
    (bad-request "invalid tx-op" {:tx-op op}))
  (let [[kind & args] op]
    (case kind
      "put" (let [[doc & vts] args]
              (when-not (map? doc) (bad-request "put needs a document" {:tx-op op}))
              (into [::xt/put doc] (map ->date) (remove nil? vts)))
      "delete" (let [[eid & vts] args]
                 (into [::xt/delete eid] (map ->date) (remove nil? vts)))
      "match" (let [[eid doc vt] args]
                (cond-> [::xt/match eid doc] vt (conj (->date vt))))
      "evict" [::xt/evict (first args)]
      (bad-request (str "invalid tx-op: unknown op " kind) {:tx-op op}))))

(defn- db-for
  "The db at the basis in the request's valid-time, tx-id and tx-time."
  [node params]
  (let [vt (->date (params "valid-time"))
        tx-id (->long (params "tx-id"))
        tx-time (->date (params "tx-time"))]
    (xt/db node (cond-> {}
                  vt (assoc ::xt/valid-time vt)
                  (or tx-id tx-time) (assoc ::xt/tx (cond-> {}
                                                     tx-id (assoc ::xt/tx-id tx-id)
                                                     tx-time (assoc ::xt/tx-time tx-time)))))))

(defn- eid-param
  "The entity of a request: eid (a string id) or, as XTDB's module reads
  it, eid-edn (an EDN id; #xtdb/id \"hex\" names an entity by its id hash,
  which is how the tx log names it)."
  [params]
  (cond
    (params "eid-edn") (try (c/read-edn-string-with-readers (params "eid-edn"))
                            (catch Exception e (bad-request (str "invalid eid-edn: " (ex-message e)) {})))
    (params "eid") (params "eid")
    :else (bad-request "Missing eid" {})))

(defn- write-edn [^Writer w v]
  (binding [*print-length* nil *print-level* nil *print-namespace-maps* false]
    (print-method v w)))

(defn- send! [^HttpExchange ex status body]
  (let [bs (.getBytes (binding [*print-length* nil *print-level* nil *print-namespace-maps* false]
                        (pr-str body)) "UTF-8")]
    (.set (.getResponseHeaders ex) "Content-Type" "application/edn")
    (.sendResponseHeaders ex status (if (zero? (alength bs)) -1 (alength bs)))
    (with-open [os (.getResponseBody ex)] (.write os bs))))

(defn- stream-seq!
  "Answers 200 with an EDN vector written element by element (constant
  memory for long tx logs)."
  [^HttpExchange ex xs]
  (.set (.getResponseHeaders ex) "Content-Type" "application/edn")
  (.sendResponseHeaders ex 200 0)
  (with-open [w (OutputStreamWriter. (.getResponseBody ex) "UTF-8")]
    (.write w "[")
    (doseq [x xs] (write-edn w x) (.write w "\n"))
    (.write w "]")))

(defn- not-found [ex msg] (send! ex 404 {:error msg}))

(defn- handle [node ^HttpExchange ex]
  (let [path (.getPath (.getRequestURI ex))
        method (.getRequestMethod ex)
        params (parse-params (.getRawQuery (.getRequestURI ex)))
        body (fn [] (slurp (.getRequestBody ex) :encoding "UTF-8"))]
    (case [method path]
      ["GET" "/_xtdb/status"] (send! ex 200 (xt/status node))

      ["POST" "/_xtdb/submit-tx"]
      (let [in (try (json/read-str (body) :key-fn keyword)
                    (catch Exception e (bad-request "Malformed \"application/json\" request." {})))
            ops (:tx-ops in)]
        (when-not (sequential? ops) (bad-request "Malformed \"application/json\" request." {}))
        (send! ex 202 (xt/submit-tx node (mapv json->tx-op ops))))

      ["GET" "/_xtdb/await-tx"]
      (let [timeout (or (->long (params "timeout")) (bad-request "timeout is required" {}))]
        (send! ex 200 (xt/await-tx node {::xt/tx-id (->long (params "tx-id"))} (Duration/ofMillis timeout))))

      ["GET" "/_xtdb/tx-committed"]
      (send! ex 200 {:tx-committed? (xt/tx-committed? node {::xt/tx-id (->long (params "tx-id"))})})

      ["GET" "/_xtdb/latest-completed-tx"]
      (if-let [tx (xt/latest-completed-tx node)] (send! ex 200 tx) (not-found ex "No latest-completed-tx found."))

      ["GET" "/_xtdb/latest-submitted-tx"]
      (if-let [tx (xt/latest-submitted-tx node)] (send! ex 200 tx) (not-found ex "No latest-submitted-tx found."))

      ["GET" "/_xtdb/entity"]
      (let [eid (eid-param params)
            db (db-for node params)]
        (if (->bool (params "history"))
          (let [order (case (params "sort-order")
                        "asc" :asc
                        "desc" :desc
                        (bad-request "sort-order must be asc or desc" {}))]
            (send! ex 200 (vec (xt/entity-history
                                db eid order
                                (cond-> {:with-docs? (->bool (params "with-docs"))
                                         :with-corrections? (->bool (params "with-corrections"))}
                                  (params "start-valid-time") (assoc :start-valid-time (->date (params "start-valid-time")))
                                  (params "end-valid-time") (assoc :end-valid-time (->date (params "end-valid-time")))
                                  (params "start-tx-id") (assoc :start-tx {::xt/tx-id (->long (params "start-tx-id"))})
                                  (params "end-tx-id") (assoc :end-tx {::xt/tx-id (->long (params "end-tx-id"))}))))))
          (if-let [doc (xt/entity db eid)]
            (send! ex 200 doc)
            (not-found ex (str eid " entity not found")))))

      ["GET" "/_xtdb/entity-tx"]
      (let [eid (eid-param params)]
        (if-let [etx (xt/entity-tx (db-for node params) eid)]
          (send! ex 200 etx)
          (not-found ex (str eid " entity-tx not found"))))

      ["POST" "/_xtdb/query"]
      (let [{:keys [query in-args]} (try (edn/read-string (body))
                                         (catch Exception _ (bad-request "Malformed \"application/edn\" request." {})))
            query (if (string? query) (edn/read-string query) query)]
        (send! ex 200 (vec (apply xt/q (db-for node params) query in-args))))

      ["GET" "/_xtdb/tx-log"]
      ;; limit is ctxstore's addition (XTDB's module ignores it): it lets a
      ;; client page through a long log in constant memory.
      (with-open [it (xt/open-tx-log node (->long (params "after-tx-id")) (->bool (params "with-ops?")))]
        (stream-seq! ex (cond->> (iterator-seq it)
                          (params "limit") (take (->long (params "limit"))))))

      ["GET" "/_xtdb/ctxstore/search"] ; ctxstore's addition: full-text search (ctxstore.xtdb-search)
      (send! ex 200 (search/search node (db-for node params)
                                   {:text (or (params "text") (bad-request "text is required" {}))
                                    :words (str/split (or (params "words") "") #" ")
                                    :kinds (some-> (params "kinds") edn/read-string)
                                    :sessions (some-> (params "sessions") edn/read-string)
                                    :since (->long (params "since")) :until (->long (params "until"))
                                    :limit (or (->long (params "limit")) 20)}))

      (not-found ex (str "no route " method " " path)))))

(defn- error-answer [^Throwable e]
  (let [data (ex-data e)]
    (cond
      (instance? NodeOutOfSyncException e)
      [400 {:xtdb.error/error-type :node-out-of-sync :xtdb.error/message (ex-message e)}]
      (= 400 (::status data)) [400 {:error (ex-message e)}]
      (instance? IllegalArgumentException e) [400 {:error (ex-message e)}]
      (:xtdb.error/error-type data) [400 (assoc (select-keys data [:xtdb.error/error-type :xtdb.error/error-key])
                                                :xtdb.error/message (ex-message e))]
      (instance? TimeoutException e) [500 {:type "exception" :class "java.util.concurrent.TimeoutException"}]
      (instance? NumberFormatException e) [400 {:error (ex-message e)}]
      (instance? RuntimeException e) (if (instance? TimeoutException (ex-cause e))
                                       [500 {:type "exception" :class "java.util.concurrent.TimeoutException"}]
                                       [500 {:type "exception" :class (.getName (class e)) :message (ex-message e)}])
      :else [500 {:type "exception" :class (.getName (class e)) :message (ex-message e)}])))

(defn -main [config-file port]
  (let [node (xt/start-node (edn/read-string (slurp config-file)))
        server (HttpServer/create (InetSocketAddress. "127.0.0.1" (Integer/parseInt port)) 64)]
    (.createContext server "/_xtdb/"
                    (reify HttpHandler
                      (handle [_ ex]
                        (try
                          (handle node ex)
                          (catch Throwable e
                            (let [[status body] (error-answer e)]
                              (try (send! ex status body) (catch Throwable _))))
                          (finally (.close ex))))))
    (.setExecutor server (Executors/newFixedThreadPool 16))
    (.addShutdownHook (Runtime/getRuntime)
                      (Thread. ^Runnable (fn []
                                           (.stop server 0)
                                           (.close ^java.io.Closeable node))))
    (.start server)
    (println "ctxstore XTDB" (:xtdb.version/version (xt/status node)) "listening on 127.0.0.1:" port)
    (flush)
    @(promise)))
