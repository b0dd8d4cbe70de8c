package objects

// ContentHashInput returns the canonical JSON that content_hash is the
// SHA-256 of: the document without "xt/id", "type", "source",
// "identity_hash", "source_hash", "content_hash" and "metadata_view_hash".
// It includes "content" (null included), "nickname", the kind fields and
// every Extra field.
func (o *Object) ContentHashInput() ([]byte, error) {
	if err := o.validate(false); err != nil {
		return nil, err
	}
	d, err := o.payloadDoc()
	if err != nil {
		return nil, err
	}
	return canonicalNormalized(d)
}

// ComputeContentHash returns the content hash o's payload gives now.
func (o *Object) ComputeContentHash() (string, error) {
	if err := o.validate(false); err != nil {
		return "", err
	}
	d, err := o.payloadDoc()
	if err != nil {
		return "", err
	}
	return hashNormalized(d)
}

// ComputeMetadataViewHash returns SHA-256 of the canonical JSON of
// MetadataView(o).
func (o *Object) ComputeMetadataViewHash() (string, error) {
	if err := o.validate(false); err != nil {
		return "", err
	}
	return HashValue(MetadataView(o))
}

// Seal validates o and sets ContentHash and MetadataViewHash to the values
// its fields give. Call it after every payload change and before Doc.
func (o *Object) Seal() error {
	ch, err := o.ComputeContentHash()
	if err != nil {
		return err
	}
	mh, err := o.ComputeMetadataViewHash()
	if err != nil {
		return err
	}
	o.ContentHash, o.MetadataViewHash = ch, mh
	return nil
}

// VerifyHashes recomputes the identity, content and metadata view hashes of
// o and compares them with the stored ones. A difference is a
// *HashMismatchError (wrapping ErrHashMismatch) naming the first hash that
// differs. The source hash cannot be checked without the source's bytes;
// see VerifySource.
func (o *Object) VerifyHashes() error {
	if err := o.Validate(); err != nil {
		return err
	}
	ch, err := o.ComputeContentHash()
	if err != nil {
		return err
	}
	if ch != o.ContentHash {
		return &HashMismatchError{ID: o.ID(), Hash: "content_hash", Want: o.ContentHash, Got: ch}
	}
	mh, err := o.ComputeMetadataViewHash()
	if err != nil {
		return err
	}
	if mh != o.MetadataViewHash {
		return &HashMismatchError{ID: o.ID(), Hash: "metadata_view_hash", Want: o.MetadataViewHash, Got: mh}
	}
	return nil
}

// VerifySource reports whether raw, the external source's current bytes,
// still hash to o's stored source hash: nil when they do, a
// *HashMismatchError naming "source_hash" when they do not (or when o has
// no source hash).
func (o *Object) VerifySource(raw []byte) error {
	got := HashBytes(raw)
	if got != o.SourceHash {
		return &HashMismatchError{ID: o.ID(), Hash: "source_hash", Want: o.SourceHash, Got: got}
	}
	return nil
}
