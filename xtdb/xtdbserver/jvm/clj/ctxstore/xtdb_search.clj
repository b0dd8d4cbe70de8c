;; Full-text search on the XTDB node (docs/recall.md): an indexer for
;; XTDB's own Lucene module (com.xtdb/xtdb-lucene 1.24.3, the newest Maven
;; Central serves, beside xtdb-core 1.24.5) and the search behind
;; GET /_xtdb/ctxstore/search.
;;
;; The indexer writes one Lucene document per searchable document version
;; (files, toolcalls, notes, user objects, system prompts, session metadata)
;; and one per chat turn, with the same fields as the SQLite backend's
;; search units: title (path, title, name, tool and arguments, nickname,
;; description, tags) and body (content, or a turn's user and assistant
;; text). XTDB's module calls it for every committed transaction before the
;; transaction counts as indexed (refresh after every transaction), so a
;; version is findable once await-tx returns; an evict deletes the entity's
;; Lucene documents. Temporal filtering is ours: a hit counts only if it is
;; the version visible in the request's db (content hash), or, for a chat
;; turn, if the visible chat version has that turn.
(ns ctxstore.xtdb-search
  (:require [clojure.string :as str]
            [xtdb.api :as xt]
            [xtdb.codec :as c]
            [xtdb.lucene :as l])
  (:import (org.apache.lucene.document Document Field$Store StoredField StringField TextField)
           (org.apache.lucene.index IndexWriter Term)
           (org.apache.lucene.queryparser.classic MultiFieldQueryParser QueryParser$Operator)
           (org.apache.lucene.search BooleanClause$Occur BooleanQuery$Builder IndexSearcher Query ScoreDoc SearcherManager TermInSetQuery TopDocs)
           (org.apache.lucene.util BytesRef)))

(def ^:private whole-kinds #{"file" "toolcall" "note" "user" "system_prompt" "session_meta"})

(defn- text-blocks [v]
  (cond
    (string? v) v
    (sequential? v) (->> v
                         (filter #(and (map? %) (= "text" (:type %)) (string? (:text %))))
                         (map :text)
                         (str/join "\n"))
    :else nil))

(defn- join-nonblank [sep xs]
  (str/join sep (remove str/blank? (map #(when (some? %) (str %)) xs))))

(defn- args-text [doc]
  (cond
    (string? (:args_display doc)) (:args_display doc)
    (map? (:args doc)) (join-nonblank " " (filter string? (vals (:args doc))))
    :else nil))

(defn- title-of [doc]
  (join-nonblank " " [(get-in doc [:source :path]) (:title doc) (:name doc) (:tool doc)
                      (args-text doc) (:nickname doc) (:description doc)
                      (when (sequential? (:tags doc)) (join-nonblank " " (filter string? (:tags doc))))]))

(defn- session-of [doc]
  (let [cr (:chat_ref doc)]
    (cond
      (and (string? cr) (str/starts-with? cr "chat:")) (subs cr 5)
      (string? (:session_id doc)) (:session_id doc)
      :else "")))

(defn- units
  "The search units of one document version: [part title body session]."
  [doc]
  (let [kind (:type doc)]
    (cond
      (contains? whole-kinds kind)
      [[-1 (title-of doc) (or (when (string? (:content doc)) (:content doc)) (:summary doc) "") (session-of doc)]]

      (and (= "chat" kind) (string? (:crux.db/id doc)) (sequential? (:turns doc)))
      (let [session (subs (:crux.db/id doc) 5)]
        (map-indexed (fn [i turn]
                       [i "" (join-nonblank "\n" [(text-blocks (:user turn)) (text-blocks (:assistant turn))]) session])
                     (:turns doc)))

      ;; A chat stored one document per turn: the turn's unit is
      ;; the chat's, part n; a turn converted from an earlier chat was
      ;; indexed from the chat versions that held it (same key).
      (and (= "chat_turn" kind) (string? (:session_id doc)) (number? (:n doc)) (map? (:turn doc)))
      (let [session (:session_id doc) turn (:turn doc)]
        [[(long (:n doc)) "" (join-nonblank "\n" [(text-blocks (:user turn)) (text-blocks (:assistant turn))]) session
          (str "chat:" session) "chat"]])

      :else [])))

(defn- sha256 [^String s]
  (let [md (java.security.MessageDigest/getInstance "SHA-256")]
    (apply str (map #(format "%02x" %) (.digest md (.getBytes s "UTF-8"))))))

(defn fold
  "Text as it is indexed and searched: accents removed (NFD, marks
  dropped) and, with words? set, every run of characters that are not
  letters or digits made one space, so Lucene's StandardAnalyzer sees the
  words SQLite's unicode61 tokenizer sees (billing.go is two words)."
  [^String s words?]
  (let [s (-> (java.text.Normalizer/normalize s java.text.Normalizer$Form/NFD)
              (str/replace #"\p{M}+" ""))]
    (if words? (str/replace s #"[^\p{L}\p{N}]+" " ") s)))

(def ^:private f-key "_ctx_key")       ; dedup key of a unit
(def ^:private f-eid-hash "_crux_eid") ; the field XTDB's own evict deletes by

(defrecord Indexer []
  l/LuceneIndexer
  (index! [_ index-writer docs]
    (doseq [[h doc] docs
            :when (string? (:crux.db/id doc))
            [part title body session unit-eid unit-kind] (units doc)
            :let [eid (or unit-eid (:crux.db/id doc))
                  kind (or unit-kind (:type doc))
                  hash-str (str h)
                  ;; A chat turn is keyed by its text, so an unchanged turn
                  ;; in the next chat version is not indexed again.
                  k (if (neg? part)
                      (str hash-str "/" eid)
                      (sha256 (str eid "\u0000" part "\u0000" body)))
                  d (doto (Document.)
                      (.add (StringField. f-key k Field$Store/NO))
                      (.add (StringField. f-eid-hash (l/->hash-str eid) Field$Store/NO))
                      (.add (StringField. "eid" ^String eid Field$Store/YES))
                      (.add (StringField. "kind" ^String kind Field$Store/YES))
                      (.add (StringField. "session" ^String session Field$Store/YES))
                      (.add (StoredField. "part" (long part)))
                      (.add (StoredField. "hash" hash-str))
                      (.add (StoredField. "title_text" ^String title))
                      (.add (StoredField. "body_text" ^String body))
                      (.add (TextField. "title" ^String (fold title true) Field$Store/NO))
                      (.add (TextField. "body" ^String (fold body true) Field$Store/NO)))]]
      (.updateDocument ^IndexWriter index-writer (Term. f-key k) d)))
  (evict! [_ index-writer eids]
    (.deleteDocuments ^IndexWriter index-writer
                      ^"[Lorg.apache.lucene.index.Term;"
                      (into-array Term (for [e eids] (Term. f-eid-hash (l/->hash-str e)))))))

(defn ->indexer [_] (->Indexer))

(defn- snippet
  "A few words around the first occurrence of any of words in text, the
  occurrences marked with « and »."
  [^String text words]
  (let [lower (str/lower-case text)
        at (->> words (keep #(let [i (.indexOf lower ^String %)] (when (>= i 0) i))) sort first)]
    (if-not at
      (subs text 0 (min 120 (count text)))
      (let [start (max 0 (- at 60))
            end (min (count text) (+ at 100))
            piece (subs text start end)
            marked (reduce (fn [s w]
                             (str/replace s (re-pattern (str "(?iu)(?<![\\p{L}\\p{N}])(" (java.util.regex.Pattern/quote w) "[\\p{L}\\p{N}]*)"))
                                          "«$1»"))
                           piece words)]
        (str (when (pos? start) "…") (str/replace marked #"\s+" " ") (when (< end (count text)) "…"))))))

(defn- visible
  "Whether a hit is visible in db, with the visible version's entity-tx."
  [db {:keys [eid part hash]}]
  (when-let [etx (xt/entity-tx db eid)]
    (when-let [ch (::xt/content-hash etx)]
      (if (neg? part)
        (when (= hash (str ch)) etx)
        (let [n (ffirst (xt/q db '{:find [n] :in [e] :where [[e :turn_count n]]} eid))]
          (when (and (number? n) (> n part)) etx))))))

(defn search
  "Runs one search: text is a Lucene query over title (weight 2) and body,
  words the lower-cased words to mark in snippets; kinds and sessions
  filter; since and until (epoch ms) bound the visible version's tx time."
  [node db {:keys [text words kinds sessions since until limit]}]
  (let [store (get @(:!system node) ::l/lucene-store)
        parser (doto (MultiFieldQueryParser. (into-array String ["title" "body"]) (:analyzer store) {"title" (float 2.0) "body" (float 1.0)})
                 (.setDefaultOperator QueryParser$Operator/AND))
        q (let [b (doto (BooleanQuery$Builder.) (.add (.parse parser ^String (fold text false)) BooleanClause$Occur/MUST))]
            (when (seq kinds)
              (.add b (TermInSetQuery. "kind" ^java.util.Collection (mapv #(BytesRef. ^String %) kinds)) BooleanClause$Occur/FILTER))
            (when (seq sessions)
              (.add b (TermInSetQuery. "session" ^java.util.Collection (mapv #(BytesRef. ^String %) sessions)) BooleanClause$Occur/FILTER))
            (.build b))
        ^SearcherManager sm (:searcher-manager store)
        ^IndexSearcher searcher (.acquire sm)]
    (try
      (loop [^ScoreDoc after nil, out []]
        (let [^TopDocs top (if after (.searchAfter searcher after ^Query q 200) (.search searcher ^Query q 200))
              sds (.-scoreDocs top)
              out (reduce (fn [out ^ScoreDoc sd]
                            (if (>= (count out) limit)
                              (reduced out)
                              (let [d (.doc searcher (.-doc sd))
                                    hit {:eid (.get d "eid") :part (.longValue (.numericValue (.getField d "part")))
                                         :hash (.get d "hash")}
                                    etx (visible db hit)
                                    tt (some-> etx ::xt/tx-time .getTime)]
                                (if (and etx (or (nil? since) (>= tt since)) (or (nil? until) (< tt until)))
                                  (conj out {:id (:eid hit) :kind (.get d "kind") :session (.get d "session")
                                             :turn (:part hit) :title (.get d "title_text")
                                             :snippet (let [body (.get d "body_text")]
                                                        (snippet (if (str/blank? body) (.get d "title_text") body) words))
                                             :score (double (.-score sd))
                                             :tx-id (::xt/tx-id etx) :tx-time (::xt/tx-time etx)
                                             :valid-time (::xt/valid-time etx)})
                                  out))))
                          out sds)]
          (if (or (>= (count out) limit) (< (alength sds) 200))
            out
            (recur (aget sds (dec (alength sds))) out))))
      (finally (.release sm searcher)))))
