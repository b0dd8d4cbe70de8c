package recall

import (
	"sort"
	"strings"

	"github.com/ctxstore/ctxstore/objects"
)

// digest is what an index run keeps of the turns of a session's chat it
// has read (turns [0, turns)): the counts the metadata records, the
// offline generator's inputs (word scores and first uses, the first and
// last user messages, the last answer) and, with a provider, the tail of
// the serialized conversation. Adding turns to it one at a time and asking
// for the fields gives what a run over the whole conversation gives, so an
// index run reads only the turns added since the last one: its
// work and memory follow what is new, not the session's length.
type digest struct {
	turns   int // turns read
	users   int // user messages (Conversation's, harness noise included)
	indexed int // 1 + the last turn with a message (Meta.IndexedTurns)

	words   map[string]*wordStat
	userPos int // words counted in user messages (keywords' positions)
	asstPos int // in assistant messages
	nUsers  int // user messages that are not the harness's
	first   string
	last    []string // the last three of them, oldest first
	answer  string   // the last assistant message
	nAnswer int

	// maxBytes > 0 keeps tail: at least the last maxBytes+1 bytes of
	// Serialize's text (all of it when shorter), so TruncateTail(tail)
	// is Serialize(msgs, maxBytes).
	maxBytes int
	tail     []byte
}

// wordStat is a word's score in keywords and where it was first used, in
// user messages (user >= 0) or else in assistant messages: keywords reads
// every user message before any assistant message.
type wordStat struct{ score, user, asst int }

func newDigest(maxBytes int) *digest {
	return &digest{words: map[string]*wordStat{}, maxBytes: maxBytes}
}

// turnMessages returns turn n's user and assistant text as Conversation
// gives them (none, one or both).
func turnMessages(n int, t objects.Turn) []Message {
	var out []Message
	if s := strings.TrimSpace(t.UserText()); s != "" {
		out = append(out, Message{Role: "user", Text: s, Turn: n})
	}
	var parts []string
	for _, b := range t.Assistant {
		if b["type"] == "text" {
			if s, ok := b["text"].(string); ok && strings.TrimSpace(s) != "" {
				parts = append(parts, strings.TrimSpace(s))
			}
		}
	}
	if len(parts) > 0 {
		out = append(out, Message{Role: "assistant", Text: strings.Join(parts, "\n"), Turn: n})
	}
	return out
}

// addTurn adds turn d.turns.
func (d *digest) addTurn(t objects.Turn) {
	for _, m := range turnMessages(d.turns, t) {
		d.add(m)
	}
	d.turns++
}

// add adds one message.
func (d *digest) add(m Message) {
	d.indexed = max(d.indexed, m.Turn+1)
	if d.maxBytes > 0 {
		if len(d.tail) > 0 {
			d.tail = append(d.tail, "\n\n"...)
		}
		if m.Role == "user" {
			d.tail = append(d.tail, "[User]: "...)
		} else {
			d.tail = append(d.tail, "[Assistant]: "...)
		}
		d.tail = append(d.tail, m.Text...)
		if keep := d.maxBytes + 1; len(d.tail) > 2*keep {
			d.tail = append(d.tail[:0], d.tail[len(d.tail)-keep:]...)
		}
	}
	if m.Role == "user" {
		d.users++
		if harnessNoise(m.Text) {
			return
		}
		if d.nUsers == 0 {
			d.first = m.Text
		}
		d.nUsers++
		if d.last = append(d.last, m.Text); len(d.last) > 3 {
			d.last = append(d.last[:0], d.last[1:]...)
		}
		d.count(m.Text, 2, &d.userPos, true)
		return
	}
	d.answer, d.nAnswer = m.Text, d.nAnswer+1
	d.count(m.Text, 1, &d.asstPos, false)
}

// count adds a text's words to the scores (keywords' rule).
func (d *digest) count(text string, weight int, pos *int, user bool) {
	for _, word := range wordRe.FindAllString(strings.ToLower(text), -1) {
		if stopWords[word] || len(word) > 30 {
			continue
		}
		w := d.words[word]
		if w == nil {
			w = &wordStat{user: -1, asst: -1}
			d.words[word] = w
		}
		if user && w.user < 0 {
			w.user = *pos
		} else if !user && w.asst < 0 {
			w.asst = *pos
		}
		*pos++
		w.score += weight
	}
}

// keywords ranks the words of the user's messages (twice) and the
// assistant's (once), most frequent first, ties by first use (user
// messages before assistant messages).
func (d *digest) keywords() []string {
	var words []string
	for w, s := range d.words {
		if s.score >= 2 { // a word of the user's, or repeated by the assistant
			words = append(words, w)
		}
	}
	firstUse := func(w string) (int, int) {
		if s := d.words[w]; s.user >= 0 {
			return 0, s.user
		}
		return 1, d.words[w].asst
	}
	sort.Slice(words, func(i, j int) bool {
		si, sj := d.words[words[i]].score, d.words[words[j]].score
		if si != sj {
			return si > sj
		}
		ai, pi := firstUse(words[i])
		aj, pj := firstUse(words[j])
		if ai != aj {
			return ai < aj
		}
		return pi < pj
	})
	var out []string
	for _, w := range words {
		if nameRe.MatchString(w) {
			out = append(out, w)
		}
		if len(out) == 12 {
			break
		}
	}
	return out
}

// fields is the offline generator's answer for the messages added.
func (d *digest) fields() Fields {
	kw := d.keywords()
	f := Fields{Tags: kw}
	if len(f.Tags) > 5 {
		f.Tags = f.Tags[:5]
	}
	nameWords := kw
	if len(nameWords) > 3 {
		nameWords = nameWords[:3]
	}
	f.Name = strings.Join(nameWords, "-")
	if f.Name == "" {
		f.Name = "untitled-session"
		f.Tags = []string{"untitled"}
	}
	if d.nUsers > 0 {
		f.Description = cutRunes(firstSentence(d.first), 160)
	}
	if strings.TrimSpace(f.Description) == "" {
		f.Description = "A session without user text."
	}
	var b strings.Builder
	if d.nUsers > 0 {
		b.WriteString("Asked first: " + cutRunes(oneLineText(d.first), 300))
	}
	if d.nUsers > 1 {
		// The last three after the first (fewer when there are fewer).
		var later []string
		for _, u := range d.last[len(d.last)-min(3, d.nUsers-1):] {
			later = append(later, cutRunes(firstSentence(u), 160))
		}
		b.WriteString("\nLater: " + strings.Join(later, " | "))
	}
	if d.nAnswer > 0 {
		b.WriteString("\nLast answer: " + cutRunes(firstSentence(d.answer), 300))
	}
	f.Summary = cutRunes(b.String(), 4000)
	return f
}

// conversation is the provider's input: Serialize's text of the messages
// added, its tail kept (maxBytes).
func (d *digest) conversation() string { return TruncateTail(string(d.tail), d.maxBytes) }
