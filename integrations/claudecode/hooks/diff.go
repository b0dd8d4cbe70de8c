package hooks

import (
	"fmt"
	"strings"
)

// Diff is the change as a unified diff (three lines of context), for
// --dry-run; "" when the change does nothing.
func (c Change) Diff() string {
	if !c.Changed() {
		return ""
	}
	from, to := "a"+c.Path, "b"+c.Path
	if c.Before == nil {
		from = "/dev/null"
	}
	if c.After == nil {
		to = "/dev/null"
	}
	a, b := lines(string(c.Before)), lines(string(c.After))
	ops := removalsFirst(editScript(a, b))
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", from, to)
	const ctx = 3
	// Group the script into hunks: runs of changes with up to 2*ctx equal
	// lines between them.
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-ctx, 0)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*ctx {
				end = min(end+ctx, len(ops))
				break
			}
			end = run
		}
		aStart, bStart := ops[start].a, ops[start].b
		var aN, bN int
		var body strings.Builder
		for _, op := range ops[start:end] {
			switch op.kind {
			case ' ':
				aN++
				bN++
				body.WriteString(" " + a[op.a])
			case '-':
				aN++
				body.WriteString("-" + a[op.a])
			case '+':
				bN++
				body.WriteString("+" + b[op.b])
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n%s", span(aStart, aN), span(bStart, bN), body.String())
		i = end
	}
	return out.String()
}

func span(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// lines splits s into lines that keep their newline (a missing final
// newline is added, so the diff stays line-based).
func lines(s string) []string {
	if s == "" {
		return nil
	}
	parts := strings.SplitAfter(s, "\n")
	if parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	} else {
		parts[len(parts)-1] += "\n"
	}
	return parts
}

type op struct {
	kind byte // ' ', '-', '+'
	a, b int  // line indexes in a and b (the position reached, for '+' and '-')
}

// editScript is a shortest edit script from a to b by longest common
// subsequence (settings files are small).
func editScript(a, b []string) []op {
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []op
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, op{' ', i, j})
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			ops = append(ops, op{'+', i, j})
			j++
		default:
			ops = append(ops, op{'-', i, j})
			i++
		}
	}
	return ops
}

// removalsFirst orders each run of changes as diff tools do: the lines
// removed, then the lines added.
func removalsFirst(ops []op) []op {
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		j := i
		for j < len(ops) && ops[j].kind != ' ' {
			j++
		}
		run := append([]op(nil), ops[i:j]...)
		k := i
		for _, o := range run {
			if o.kind == '-' {
				ops[k] = o
				k++
			}
		}
		for _, o := range run {
			if o.kind == '+' {
				ops[k] = o
				k++
			}
		}
		i = j
	}
	return ops
}
