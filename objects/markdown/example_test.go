package markdown_test

import (
	"fmt"

	"github.com/ctxstore/ctxstore/objects/markdown"
)

func Example() {
	src := []byte(`---
aliases: [Plan]
tags: [project/ctxstore]
---
# Project plan

Goals are in [[Roadmap#Goals|the roadmap]]; see ![[arch.png]] and [spec](specs/store.md).
` + "Not a link: `[[Code]]`." + ` #draft ^p1
`)
	n, err := markdown.Parse(src)
	if err != nil {
		panic(err)
	}
	fmt.Println(n.Title, n.Aliases, n.Tags, n.BlockIDs)
	for _, l := range n.Links {
		fmt.Printf("%s %q heading=%q label=%q embed=%v line=%d\n", l.Kind, l.Target, l.Heading, l.Label, l.Embed, l.Line)
	}
	fmt.Println(markdown.ToNoteFields(n).Links)
	// Output:
	// Project plan [Plan] [project/ctxstore draft] [p1]
	// wikilink "Roadmap" heading="Goals" label="the roadmap" embed=false line=7
	// wikilink "arch.png" heading="" label="" embed=true line=7
	// markdown "specs/store.md" heading="" label="spec" embed=false line=7
	// [Roadmap arch.png specs/store.md]
}
