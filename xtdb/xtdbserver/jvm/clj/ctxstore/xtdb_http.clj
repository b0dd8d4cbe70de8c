;; ctxstore's HTTP front for a real XTDB 1.24.5 node.
;;
;; XTDB's own HTTP module (com.xtdb:xtdb-http-server) and its dependency
;; bundle are not served by the Maven Central this project can reach, so
;; ctxstore runs the released xtdb-core node behind this server of its own.
;; It answers XTDB 1.x's REST API under /_xtdb as XTDB 1.24.5's module does
;; (modules/http-server in XTDB's source; docs/xtdb-api.md lists every
;; endpoint, parameter and the few deliberate differences): the same paths,
;; kebab-case or camelCase parameters, EDN and JSON submit-tx bodies, EDN
;; or JSON answers (by Accept) that are the values the xtdb.api functions
;; return (lists where the module streams a cursor), shaped for JSON as the
;; module's encoders shape them, the same status codes and error shapes.
;; A parameter an endpoint does not take is refused with 400.
;;
;; Layout, so that other endpoints can be added without touching these:
;; `routes` maps [method path] to {:params #{...} :handler (fn [node req])};
;; a handler returns {:status :body} or {:status :stream seq}.
(ns ctxstore.xtdb-http
  (:require [clojure.data.json :as json]
            [clojure.edn :as edn]
            [clojure.instant :as instant]
            [clojure.string :as str]
            [clojure.walk :as walk]
            ;; loaded for its corrections to XTDB before the node starts
            [ctxstore.xtdb-fixes]
            [ctxstore.xtdb-search :as search]
            [xtdb.api :as xt]
            [xtdb.codec :as c]
            [xtdb.tx.conform :as txc])
  (:import (com.sun.net.httpserver HttpExchange HttpHandler HttpServer)
           (java.io OutputStreamWriter Writer)
           (java.net InetSocketAddress URLDecoder)
           (java.time Duration)
           (java.util.concurrent Executors TimeoutException)
           (xtdb.api NodeOutOfSyncException)))

;; ---------------------------------------------------------------- requests

(defn- kebab
  "A camelCase parameter name in kebab case (validTime -> valid-time), as
  the module's wrap-camel-case-params does; kebab names pass unchanged."
  [^String k]
  (-> k
      (str/replace #"([a-z0-9])([A-Z]+)" "$1-$2")
      (str/lower-case)))

(defn- parse-params [^String q]
  (into {} (for [kv (str/split (or q "") #"&")
                 :when (seq kv)
                 :let [[k v] (str/split kv #"=" 2)]]
             [(kebab (URLDecoder/decode ^String k "UTF-8")) (URLDecoder/decode ^String (or v "") "UTF-8")])))

(defn- bad-request
  "A 400 with the module's coercion/decoding answer shape {:error msg}."
  [msg]
  (throw (ex-info msg {::status 400 ::body {:error msg}})))

(defn- ->date [k s]
  (when s
    (try (instant/read-instant-date s)
         (catch Exception _ (bad-request (str "invalid " k ": " (pr-str s) " is not an RFC 3339 time"))))))

(defn- ->long [k s]
  (when s
    (try (Long/parseLong s)
         (catch NumberFormatException _ (bad-request (str "invalid " k ": " (pr-str s) " is not an integer"))))))

(defn- ->bool [k s]
  (case s
    nil nil
    "true" true
    "false" false
    (bad-request (str "invalid " k ": " (pr-str s) " is not true or false"))))

(defn- read-edn-param [k s]
  (when s
    (try (c/read-edn-string-with-readers s)
         (catch Exception _ (bad-request (str "invalid " k ": not EDN"))))))

(defn- read-json
  "JSON as XTDB's module reads it (jsonista, keys as keywords): integers
  that fit in 32 bits become java.lang.Integer, larger ones Long."
  [s]
  (walk/postwalk (fn [x] (if (and (instance? Long x) (<= Integer/MIN_VALUE x Integer/MAX_VALUE))
                           (Integer/valueOf (int x))
                           x))
                 (json/read-str s :key-fn keyword)))

(defn- read-json-param [k s]
  (when s
    (try (read-json s)
         (catch Exception _ (bad-request (str "invalid " k ": not JSON"))))))

(def ^:private param-types
  {"valid-time" :date "tx-time" :date "tx-id" :long
   "start-valid-time" :date "end-valid-time" :date
   "start-tx-time" :date "end-tx-time" :date
   "start-tx-id" :long "end-tx-id" :long
   "await-tx-id" :long "await-tx-time" :date "await-tx-timeout" :long
   "timeout" :long "after-tx-id" :long
   "history" :bool "with-docs" :bool "with-corrections" :bool "with-ops?" :bool
   "sort-order" :keyword
   "eid" :string "eid-edn" :edn "eid-json" :json
   "query-edn" :edn "in-args-edn" :edn "in-args-json" :json})

(defn- coerce [params]
  (into {} (for [[k v] params]
             [(keyword k)
              (case (param-types k)
                :date (->date k v)
                :long (->long k v)
                :bool (->bool k v)
                :keyword (keyword v)
                :edn (read-edn-param k v)
                :json (read-json-param k v)
                v)])))

(defn- body-string [^HttpExchange ex]
  (slurp (.getRequestBody ex) :encoding "UTF-8"))

(defn- content-type [^HttpExchange ex]
  (some-> (.getFirst (.getRequestHeaders ex) "Content-Type")
          (str/split #";") first str/trim str/lower-case))

(defn- malformed [fmt]
  (throw (ex-info "malformed" {::status 400 ::body {:error (str "Malformed " (pr-str fmt) " request.")}})))

(defn- read-body
  "The request body as EDN (the module's default) or JSON (json-fn)."
  [^HttpExchange ex json-fn]
  (let [ct (or (content-type ex) "application/edn")]
    (case ct
      "application/edn" (try (c/read-edn-string-with-readers (body-string ex))
                             (catch Exception _ (malformed ct)))
      "application/json" (if json-fn
                           (try (json-fn (body-string ex))
                                (catch clojure.lang.ExceptionInfo e (throw e))
                                (catch Exception _ (malformed ct)))
                           (malformed ct))
      (throw (ex-info "unsupported" {::status 415 ::body {:error (str "Unsupported Content-Type " ct)}})))))

;; ---------------------------------------------------------------- answers

(defn- db-for
  "The db at the basis in the request's valid-time, tx-id and tx-time."
  [node {:keys [valid-time tx-time tx-id]}]
  (xt/db node {::xt/valid-time valid-time ::xt/tx-time tx-time ::xt/tx-id tx-id}))

(defn- duration [ms] (some-> ms Duration/ofMillis))

(defn- json-tx-ops
  "XTDB's JSON tx-op form, conformed as the module's JSON decoder does:
  the op name becomes an xtdb.api keyword, a valid time string is read as
  an RFC 3339 time (kept as the string when it is not one, for XTDB to
  refuse), and a document's :xt/fn is read as EDN."
  [s]
  (let [decoders {::txc/->doc #(if (contains? % :xt/fn) (update % :xt/fn edn/read-string) %)
                  ::txc/->valid-time (fn [vt] (try (instant/read-instant-date vt) (catch Exception _ vt)))}
        in (read-json s)]
    (when-not (map? in) (malformed "application/json"))
    (update in :tx-ops
            (fn [ops]
              (when-not (sequential? ops) (malformed "application/json"))
              (try
                (mapv (fn [op]
                        (-> (vec op)
                            (update 0 #(keyword "xtdb.api" %))
                            (txc/conform-tx-op decoders)
                            (txc/->tx-op)))
                      ops)
                (catch Exception _ (malformed "application/json")))))))

(defn- entity-handler [node {:keys [eid eid-edn eid-json history sort-order with-docs with-corrections
                                    start-valid-time end-valid-time start-tx-time end-tx-time start-tx-id end-tx-id]
                             :as p}]
  (let [eid (or eid-edn eid-json eid)]
    (cond
      (nil? eid)
      (throw (ex-info "Missing eid" {::status 400 ::body {:xtdb.error/error-type :missing-eid
                                                         :xtdb.error/message "Missing eid"}}))

      history
      (let [db (db-for node p)
            cursor (xt/open-entity-history
                    db eid sort-order
                    {:with-corrections? with-corrections
                     :with-docs? with-docs
                     :start-valid-time start-valid-time
                     :start-tx (not-empty (into {} (filter val) {::xt/tx-time start-tx-time ::xt/tx-id start-tx-id}))
                     :end-valid-time end-valid-time
                     :end-tx (not-empty (into {} (filter val) {::xt/tx-time end-tx-time ::xt/tx-id end-tx-id}))})]
        {:status 200 :cursor cursor})

      :else
      (let [doc (xt/entity (db-for node p) eid)]
        (if (empty? doc)
          {:status 404 :body {:error (str eid " entity not found")}}
          {:status 200 :body doc})))))

(defn- query-handler [node ex {:keys [query-edn in-args-edn in-args-json] :as p}]
  (let [body (when (= "POST" (.getRequestMethod ^HttpExchange ex)) (read-body ex nil))
        query (or query-edn (:query body))
        in-args (or in-args-edn in-args-json (:in-args body))]
    (when (nil? query)
      (throw (ex-info "No query provided" {::status 400 ::body {:xtdb.error/error-type :no-query
                                                               :xtdb.error/message "No query provided"}})))
    (when (and (some? in-args) (not (vector? in-args)))
      (bad-request "in-args must be a vector"))
    {:status 200 :cursor (apply xt/open-q (db-for node p) query in-args)}))

(def ^:private await-params #{"await-tx-id" "await-tx-time" "await-tx-timeout"})
(def ^:private basis-params #{"valid-time" "tx-time" "tx-id"})

(def routes
  "[method path] -> {:params allowed parameter names, :await? whether the
  await-tx-* parameters apply, :handler (fn [node exchange params])}."
  {["GET" "/_xtdb/status"]
   {:params #{} :handler (fn [node _ _] {:status 200 :body (xt/status node)})}

   ["GET" "/_xtdb/db"]
   {:params basis-params :await? true
    :handler (fn [node _ p]
               (let [db (db-for node p)]
                 {:status 200 :body (merge {::xt/valid-time (xt/valid-time db)} (xt/db-basis db))}))}

   ["POST" "/_xtdb/submit-tx"]
   {:params #{}
    :handler (fn [node ex _]
               (let [{:keys [tx-ops] :as body} (read-body ex json-tx-ops)]
                 (when-not (and (map? body) (vector? tx-ops))
                   (malformed (or (content-type ex) "application/edn")))
                 {:status 202 :body (xt/submit-tx node tx-ops (::xt/submit-tx-opts body))}))}

   ["GET" "/_xtdb/await-tx"]
   {:params #{"tx-id" "timeout"}
    :handler (fn [node _ {:keys [tx-id timeout]}]
               (when-not tx-id (bad-request "tx-id is required"))
               {:status 200 :body (xt/await-tx node {::xt/tx-id tx-id} (duration timeout))})}

   ["GET" "/_xtdb/await-tx-time"]
   {:params #{"tx-time" "timeout"}
    :handler (fn [node _ {:keys [tx-time timeout]}]
               (when-not tx-time (bad-request "tx-time is required"))
               {:status 200 :body {::xt/tx-time (xt/await-tx-time node tx-time (duration timeout))}})}

   ["GET" "/_xtdb/sync"]
   {:params #{"tx-time" "timeout"}
    :handler (fn [node _ {:keys [tx-time timeout]}]
               {:status 200 :body {::xt/tx-time (if tx-time
                                                  (xt/await-tx-time node tx-time (duration timeout))
                                                  (xt/sync node (duration timeout)))}})}

   ["GET" "/_xtdb/tx-committed"]
   {:params #{"tx-id"} :await? true
    :handler (fn [node _ {:keys [tx-id]}]
               (when-not tx-id (bad-request "tx-id is required"))
               (try
                 {:status 200 :body {:tx-committed? (xt/tx-committed? node {::xt/tx-id tx-id})}}
                 (catch NodeOutOfSyncException _
                   ;; The module's handler returns the exception itself as
                   ;; the body, which its encoder cannot write: an empty 500.
                   {:status 500 :empty true})))}

   ["GET" "/_xtdb/latest-completed-tx"]
   {:params #{} :await? true
    :handler (fn [node _ _]
               (if-let [tx (xt/latest-completed-tx node)]
                 {:status 200 :body tx}
                 {:status 404 :body {:error "No latest-completed-tx found."}}))}

   ["GET" "/_xtdb/latest-submitted-tx"]
   {:params #{}
    :handler (fn [node _ _]
               (if-let [tx (xt/latest-submitted-tx node)]
                 {:status 200 :body tx}
                 {:status 404 :body {:error "No latest-submitted-tx found."}}))}

   ["GET" "/_xtdb/entity"]
   {:json :entity :params (into basis-params #{"eid" "eid-edn" "eid-json" "history" "sort-order" "with-docs" "with-corrections"
                                 "start-valid-time" "end-valid-time" "start-tx-time" "end-tx-time"
                                 "start-tx-id" "end-tx-id"})
    :await? true
    :handler (fn [node _ p] (entity-handler node p))}

   ["GET" "/_xtdb/entity-tx"]
   {:params (into basis-params #{"eid" "eid-edn" "eid-json"}) :await? true
    :handler (fn [node _ {:keys [eid eid-edn eid-json] :as p}]
               (let [eid (or eid-edn eid-json eid)]
                 (when (nil? eid) (bad-request "eid, eid-edn or eid-json is required"))
                 (if-let [etx (xt/entity-tx (db-for node p) eid)]
                   {:status 200 :body etx}
                   {:status 404 :body {:error (str eid " entity-tx not found")}})))}

   ["GET" "/_xtdb/query"]
   {:json :identity :params (into basis-params #{"query-edn" "in-args-edn" "in-args-json"}) :await? true
    :handler query-handler}

   ["POST" "/_xtdb/query"]
   {:json :identity :params (into basis-params #{"query-edn" "in-args-edn" "in-args-json"}) :await? true
    :handler query-handler}

   ["GET" "/_xtdb/attribute-stats"]
   {:json :identity :params #{} :handler (fn [node _ _] {:status 200 :body (xt/attribute-stats node)})}

   ["GET" "/_xtdb/active-queries"]
   {:json :queries :params #{} :handler (fn [node _ _] {:status 200 :body (xt/active-queries node)})}

   ["GET" "/_xtdb/recent-queries"]
   {:json :queries :params #{} :handler (fn [node _ _] {:status 200 :body (xt/recent-queries node)})}

   ["GET" "/_xtdb/slowest-queries"]
   {:json :queries :params #{} :handler (fn [node _ _] {:status 200 :body (xt/slowest-queries node)})}

   ["GET" "/_xtdb/ctxstore/search"]
   ;; ctxstore's addition, not XTDB's: full-text search over the Lucene
   ;; index (ctxstore.xtdb-search, docs/recall.md).
   {:json :identity :params (into basis-params #{"text" "words" "kinds" "sessions" "since" "until" "limit"})
    :handler (fn [node _ {:keys [text words kinds sessions since until limit] :as p}]
               (when-not text (bad-request "text is required"))
               {:status 200
                :body (search/search node (db-for node p)
                                     {:text text
                                      :words (str/split (or words "") #" ")
                                      :kinds (some->> kinds (read-edn-param "kinds"))
                                      :sessions (some->> sessions (read-edn-param "sessions"))
                                      :since (some->> since (->long "since"))
                                      :until (some->> until (->long "until"))
                                      :limit (or (some->> limit (->long "limit")) 20)})})}

   ["GET" "/_xtdb/tx-log"]
   {:json :tx-log :params #{"after-tx-id" "with-ops?"} :await? true
    ;; The whole rest of the log, streamed: XTDB's module takes no limit, so
    ;; a client pages by reading as much as it wants and closing.
    :handler (fn [node _ {:keys [after-tx-id with-ops?]}]
               {:status 200 :cursor (xt/open-tx-log node after-tx-id (boolean with-ops?))})}})

;; ---------------------------------------------------------------- formats

(defn- accepted
  "The answer format the Accept header asks for, negotiated as the module's
  muuntaja does: media ranges by descending q (ties in header order), the
  first that names a format wins; */*, application/* or no header is EDN,
  the module's default. :transit is asked for but not served."
  [^HttpExchange ex]
  (let [ranges (for [[i part] (map-indexed vector (str/split (or (.getFirst (.getRequestHeaders ex) "Accept") "") #","))
                     :let [[mt & ps] (map str/trim (str/split part #";"))
                           q (or (some #(when-let [[_ v] (re-matches #"(?i)q=([0-9.]+)" %)]
                                          (try (Double/parseDouble v) (catch Exception _ 0.0)))
                                       ps)
                                 1.0)]
                     :when (and (seq mt) (pos? q))]
                 [(- q) i (str/lower-case mt)])]
    (or (some (fn [[_ _ mt]] ({"application/edn" :edn "application/json" :json
                               "application/transit+json" :transit} mt))
              (sort ranges))
        :edn)))

(defn- camel
  "A keyword as the module's camel-case-keys writes a key (camel-snake-kebab
  on the name; the namespace dropped): :xtdb.api/tx-id -> :txId."
  [k]
  (if (keyword? k)
    (let [[w & ws] (remove empty? (str/split (name k) #"[-_]"))]
      (keyword (apply str (str/lower-case (or w "")) (map str/capitalize ws))))
    k))

(defn- camel-keys [m]
  (if (map? m) (into {} (map (fn [[k v]] [(camel k) v])) m) m))

(def ^:private json-time
  (doto (java.text.SimpleDateFormat. "yyyy-MM-dd'T'HH:mm:ss'Z'")
    (.setTimeZone (java.util.TimeZone/getTimeZone "UTC"))))

(defn- json-value
  "A value as the module's jsonista object mapper writes it: keywords and
  symbols as their text without the colon (namespace kept), times in UTC
  cut to seconds, XTDB ids as their hex text, bytes as base64, a (fn ...)
  list as its EDN text."
  [x]
  (cond
    (keyword? x) (subs (str x) 1)
    (symbol? x) (str x)
    (instance? java.util.Date x) (locking json-time (.format ^java.text.SimpleDateFormat json-time x))
    (or (instance? xtdb.codec.Id x) (instance? xtdb.codec.EDNId x)) (str x)
    (bytes? x) (.encodeToString (java.util.Base64/getEncoder) ^bytes x)
    (and (seq? x) (contains? #{'fn 'fn*} (first x))) (pr-str x)
    (map? x) (into {} (map (fn [[k v]] [(if (or (keyword? k) (symbol? k)) (json-value k) (str k)) (json-value v)])) x)
    (set? x) (mapv json-value x)
    (sequential? x) (mapv json-value x)
    :else x))

(defn- write-json ^String [x]
  (json/write-str (json-value x) :escape-slash false :escape-unicode false))

(defn- tx-log-json
  "The module's tx-log-json-encode: each op's keyword named (put, delete,
  ...), then camelCase keys."
  [tx]
  (let [ops (fn [txs] (mapv #(update (vec %) 0 name) txs))]
    (camel-keys (cond-> tx
                  (::xt/tx-ops tx) (update ::xt/tx-ops ops)
                  (::xt/tx-events tx) (update ::xt/tx-events ops)))))

(def ^:private json-encoders
  "How each route's JSON answer is shaped, as the module's muuntaja
  instances do: :camel (the default: top-level keys camelCased), :identity
  (documents, query tuples, attribute stats), :entity (a document as it is;
  history elements camelCased), :tx-log, :queries (each query state with
  its :query as EDN text, keys camelCased). {:body f, :element g}."
  {:camel {:body camel-keys :element camel-keys}
   :identity {:body identity :element identity}
   :entity {:body identity :element camel-keys}
   :tx-log {:body camel-keys :element tx-log-json}
   :queries {:body (fn [qs] (if (sequential? qs) (map #(camel-keys (update % :query pr-str)) qs) (camel-keys qs)))
             :element identity}})

;; ---------------------------------------------------------------- writing

(defmacro ^:private with-edn-printing [& body]
  `(binding [*print-length* nil *print-level* nil *print-namespace-maps* false]
     ~@body))

(defn- send!
  "Answers status with body in the format fmt (:edn or :json, encoded by
  enc of json-encoders), or an empty answer."
  [^HttpExchange ex status body empty? fmt enc]
  (let [json? (= fmt :json)
        text (when-not empty?
               (if json?
                 (write-json ((:body (json-encoders enc)) body))
                 (with-edn-printing (pr-str body))))
        bs (if empty? (byte-array 0) (.getBytes ^String text "UTF-8"))]
    (when-not empty? (.set (.getResponseHeaders ex) "Content-Type" (if json? "application/json; charset=utf-8" "application/edn")))
    (.sendResponseHeaders ex status (if (zero? (alength bs)) -1 (alength bs)))
    (when (pos? (alength bs))
      (with-open [os (.getResponseBody ex)] (.write os bs)))))

(defn- stream-cursor!
  "Answers 200 with the cursor's elements written as they come (constant
  memory for a long tx log or history): an EDN list, as the module's EDN
  encoder prints (iterator-seq cursor), or a JSON array of the elements
  shaped by the route's encoder. The cursor is closed."
  [^HttpExchange ex ^java.io.Closeable cursor fmt enc]
  (try
    (let [json? (= fmt :json)
          element (:element (json-encoders enc))]
      (.set (.getResponseHeaders ex) "Content-Type" (if json? "application/json; charset=utf-8" "application/edn"))
      (.sendResponseHeaders ex 200 0)
      (with-open [w (OutputStreamWriter. (.getResponseBody ex) "UTF-8")]
        (.write w (if json? "[" "("))
        (loop [first? true]
          (when (.hasNext ^java.util.Iterator cursor)
            (when-not first? (.write w (if json? "," " ")))
            (let [x (.next ^java.util.Iterator cursor)]
              (if json?
                (.write w (write-json (element x)))
                (with-edn-printing (print-method x ^Writer w))))
            (recur false)))
        (.write w (if json? "]" ")"))))
    (finally (.close cursor))))

(defn- error-answer
  "The module's exception middleware: NodeOutOfSync and XTDB's own illegal
  argument errors are 400 with their ex-data, anything else 500
  {:type \"exception\" :class ...} (reitit's default handler)."
  [^Throwable e]
  (let [data (ex-data e)]
    (cond
      (::status data) [(::status data) (::body data)]
      (instance? NodeOutOfSyncException e) [400 (or data {:xtdb.error/error-type :node-out-of-sync
                                                         :xtdb.error/message (ex-message e)})]
      (instance? xtdb.IllegalArgumentException e) [400 data]
      :else [500 {:type "exception" :class (.getName (class e))}])))

(def ^:private max-uri
  "Jetty's default request header buffer, which bounds XTDB's module's URIs."
  8192)

(defn- handle [node ^HttpExchange ex]
  (let [uri (.getRequestURI ex)
        path (.getPath uri)
        method (.getRequestMethod ex)]
    (if (> (count (str (.getRawPath uri) (.getRawQuery uri))) max-uri)
      (send! ex 414 nil true :edn :camel)
      (if-let [{:keys [params await? handler json] :or {json :camel}} (get routes [method path])]
        (let [fmt (accepted ex)
              _ (when (= fmt :transit)
                  (throw (ex-info "transit" {::status 406 ::body {:error "application/transit+json answers are not served; ask for application/edn or application/json"}})))
              raw (parse-params (.getRawQuery uri))
              allowed (cond-> params await? (into await-params))
              _ (doseq [k (keys raw)]
                  (when-not (allowed k)
                    (bad-request (str "unsupported parameter " k " for " method " " path
                                      (when (seq allowed) (str " (takes " (str/join ", " (sort allowed)) ")"))))))
              p (coerce raw)
              _ (when (and await? (or (:await-tx-id p) (:await-tx-time p)))
                  (xt/await-tx node (cond-> {}
                                      (:await-tx-id p) (assoc ::xt/tx-id (:await-tx-id p))
                                      (:await-tx-time p) (assoc ::xt/tx-time (:await-tx-time p)))
                               (duration (:await-tx-timeout p))))
              {:keys [status body cursor empty]} (handler node ex p)]
          (if cursor
            (stream-cursor! ex cursor fmt json)
            (send! ex status body empty fmt json)))
        (send! ex 404 {:error (str "no route " method " " path)} false (accepted ex) :camel)))))

(defn -main [config-file port]
  (let [node (xt/start-node (edn/read-string (slurp config-file)))
        server (HttpServer/create (InetSocketAddress. "127.0.0.1" (Integer/parseInt port)) 64)]
    (.createContext server "/"
                    (reify HttpHandler
                      (handle [_ ex]
                        (try
                          (handle node ex)
                          (catch Throwable e
                            (let [[status body] (error-answer e)]
                              (when (= 500 status)
                                (binding [*out* *err*] (println "ctxstore XTDB front:" (.getName (class e)) (ex-message e))))
                              (try (let [fmt (try (accepted ex) (catch Throwable _ :edn))
                                         enc (or (:json (get routes [(.getRequestMethod ex) (.getPath (.getRequestURI ex))])) :camel)]
                                     (send! ex status body false (if (= fmt :transit) :edn fmt) enc))
                                   (catch Throwable _))))
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
