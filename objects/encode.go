package objects

// Doc returns the object as a flat JSON document for a document store, keyed
// by "xt/id". The envelope fields ("xt/id", "type", "source",
// "identity_hash"), "content", "content_hash" and "metadata_view_hash" are
// always present; "source_hash", "nickname" and optional kind fields only
// when set; Extra fields as they are. Values are plain JSON values (string,
// bool, nil, int64, float64, json.Number, map[string]any, []any) in fresh
// maps and slices the caller may keep. Doc fails if the object does not
// validate or is not sealed; it does not recompute hashes.
func (o *Object) Doc() (map[string]any, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	d, err := o.payloadDoc()
	if err != nil {
		return nil, err
	}
	d["xt/id"] = o.env.id
	d["type"] = string(o.env.kind)
	if o.env.source != nil {
		d["source"] = o.env.source.Doc()
	} else {
		d["source"] = nil
	}
	d["identity_hash"] = o.env.identityHash
	d["content_hash"] = o.ContentHash
	d["metadata_view_hash"] = o.MetadataViewHash
	if o.SourceHash != "" {
		d["source_hash"] = o.SourceHash
	}
	return d, nil
}

// payloadDoc returns the mutable payload fields that content_hash covers:
// every document field except the envelope, source_hash, content_hash and
// metadata_view_hash. It assumes the kind fields validate.
func (o *Object) payloadDoc() (map[string]any, error) {
	p := &o.Payload
	d := make(map[string]any, 8+len(p.Extra))
	for k, v := range p.Extra {
		n, err := normMember(k, v, "", 0)
		if err != nil {
			return nil, err
		}
		d[k] = n
	}
	if p.Content != nil {
		d["content"] = *p.Content
	} else {
		d["content"] = nil
	}
	if p.Nickname != "" {
		d["nickname"] = p.Nickname
	}
	switch o.env.kind {
	case KindFile:
		d["file_type"] = p.File.FileType
		d["char_count"] = p.File.CharCount
	case KindToolcall:
		return d, p.Toolcall.encode(d)
	case KindChat:
		return d, p.Chat.encode(d)
	case KindNote:
		return d, p.Note.encode(d)
	}
	return d, nil
}

func (t *ToolcallFields) encode(d map[string]any) error {
	d["tool"] = t.Tool
	args, err := normalize(t.Args, "args", 0)
	if err != nil {
		return err
	}
	if args == nil {
		args = map[string]any{}
	}
	d["args"] = args
	d["status"] = string(t.Status)
	setOpt(d, "args_display", t.ArgsDisplay)
	setOpt(d, "chat_ref", t.ChatRef)
	setOpt(d, "provider_id", t.ProviderID)
	if t.FileRefs != nil {
		d["file_refs"] = stringsToAny(t.FileRefs)
	}
	return nil
}

func (c *ChatFields) encode(d map[string]any) error {
	turns := make([]any, len(c.Turns))
	for i := range c.Turns {
		td, err := c.Turns[i].doc(indexPath("turns", i))
		if err != nil {
			return err
		}
		turns[i] = td
	}
	d["turns"] = turns
	d["session_ref"] = c.SessionRef
	d["turn_count"] = c.TurnCount
	refs := c.ToolcallRefs
	if refs == nil {
		refs = []string{}
	}
	d["toolcall_refs"] = stringsToAny(refs)
	return nil
}

func (n *NoteFields) encode(d map[string]any) error {
	setOpt(d, "title", n.Title)
	for _, l := range []struct {
		key string
		v   []string
	}{{"tags", n.Tags}, {"links", n.Links}, {"aliases", n.Aliases}} {
		if l.v != nil {
			d[l.key] = stringsToAny(l.v)
		}
	}
	if n.Frontmatter != nil {
		fm, err := normalize(n.Frontmatter, "frontmatter", 0)
		if err != nil {
			return err
		}
		d["frontmatter"] = fm
	}
	return nil
}

// setOpt sets d[key] to v unless v is empty.
func setOpt(d map[string]any, key, v string) {
	if v != "" {
		d[key] = v
	}
}
