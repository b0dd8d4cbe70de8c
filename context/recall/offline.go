package recall

import (
	"regexp"
	"sort"
	"strings"
)

// OfflineFields is the offline generator (no provider configured): an
// extractive, deterministic index of a conversation. The name and tags are
// the words the user used most (ties: first used), stop words and short
// words left out; the description is the first user message's first
// sentence; the summary quotes the first request, the latest requests and
// the last answer.
func OfflineFields(msgs []Message) Fields {
	var users, assistants []string
	for _, m := range msgs {
		if m.Role == "user" {
			users = append(users, m.Text)
		} else {
			assistants = append(assistants, m.Text)
		}
	}
	kw := keywords(users, assistants)
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
	if len(users) > 0 {
		f.Description = cutRunes(firstSentence(users[0]), 160)
	}
	if strings.TrimSpace(f.Description) == "" {
		f.Description = "A session without user text."
	}
	var b strings.Builder
	if len(users) > 0 {
		b.WriteString("Asked first: " + cutRunes(oneLineText(users[0]), 300))
	}
	if len(users) > 1 {
		from := max(1, len(users)-3)
		var later []string
		for _, u := range users[from:] {
			later = append(later, cutRunes(firstSentence(u), 160))
		}
		b.WriteString("\nLater: " + strings.Join(later, " | "))
	}
	if len(assistants) > 0 {
		b.WriteString("\nLast answer: " + cutRunes(firstSentence(assistants[len(assistants)-1]), 300))
	}
	f.Summary = cutRunes(b.String(), 4000)
	return f
}

var wordRe = regexp.MustCompile(`[\p{L}][\p{L}\p{N}_]{2,}`)

// keywords ranks the words of the user's messages (twice) and the
// assistant's (once), most frequent first, ties by first use.
func keywords(users, assistants []string) []string {
	score := map[string]int{}
	first := map[string]int{}
	pos := 0
	add := func(texts []string, w int) {
		for _, t := range texts {
			for _, word := range wordRe.FindAllString(strings.ToLower(t), -1) {
				if stopWords[word] || len(word) > 30 {
					continue
				}
				if _, ok := first[word]; !ok {
					first[word] = pos
				}
				pos++
				score[word] += w
			}
		}
	}
	add(users, 2)
	add(assistants, 1)
	var words []string
	for w, s := range score {
		if s >= 2 { // a word of the user's, or repeated by the assistant
			words = append(words, w)
		}
	}
	sort.Slice(words, func(i, j int) bool {
		if score[words[i]] != score[words[j]] {
			return score[words[i]] > score[words[j]]
		}
		return first[words[i]] < first[words[j]]
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

func firstSentence(s string) string {
	s = oneLineText(s)
	for i, r := range s {
		if (r == '.' || r == '?' || r == '!') && i > 10 && (i+1 == len(s) || s[i+1] == ' ') {
			return s[:i+1]
		}
	}
	return s
}

func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }

func cutRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`the and for are but not you your with this that have from they will would there their
	what about which when make like time just know take into year some could them see other than then now look only come
	its over think also back after use two how our work first well way even new want because any these give day most
	can was were has had been being did does doing done should shall may might must here where why who whom whose all
	each few more such own same very into out off again further once both between through during before above below
	under until while let lets please thanks thank okay yes yeah sure need needs using used get got put set try tried
	file files code one also still something anything everything nothing don doesn didn isn aren wasn won can't i'm
	it's that's there's ok hmm well really actually maybe perhaps let's we'll i'll you'll it'll going gonna`) {
		m[w] = true
	}
	return m
}()
