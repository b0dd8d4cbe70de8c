package objects

// clonePayload deep-copies every slice and map of p.
func clonePayload(p Payload) Payload {
	if p.Content != nil {
		c := *p.Content
		p.Content = &c
	}
	p.Toolcall.Args = cloneMap(p.Toolcall.Args)
	p.Toolcall.FileRefs = cloneStrings(p.Toolcall.FileRefs)
	if p.Chat.Turns != nil {
		turns := make([]Turn, len(p.Chat.Turns))
		for i, t := range p.Chat.Turns {
			turns[i] = t.clone()
		}
		p.Chat.Turns = turns
	}
	p.Chat.ToolcallRefs = cloneStrings(p.Chat.ToolcallRefs)
	p.Note.Tags = cloneStrings(p.Note.Tags)
	p.Note.Links = cloneStrings(p.Note.Links)
	p.Note.Aliases = cloneStrings(p.Note.Aliases)
	p.Note.Frontmatter = cloneMap(p.Note.Frontmatter)
	p.Extra = cloneMap(p.Extra)
	return p
}

// cloneStrings copies s, keeping nil as nil.
func cloneStrings(s []string) []string {
	if s == nil {
		return nil
	}
	return append(make([]string, 0, len(s)), s...)
}

// cloneMap deep-copies m, keeping nil as nil.
func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v)
	}
	return out
}

// cloneValue deep-copies the maps and slices of a JSON value; other values
// are returned as they are.
func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return cloneMap(x)
	case []any:
		if x == nil {
			return x
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	case []string:
		return cloneStrings(x)
	case []map[string]any:
		if x == nil {
			return x
		}
		out := make([]map[string]any, len(x))
		for i, e := range x {
			out[i] = cloneMap(e)
		}
		return out
	}
	return v
}
