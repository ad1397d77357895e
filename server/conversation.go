package server

import (
	"context"
	"fmt"

	"github.com/sipack/sipack/chat"
)

// Conversation is a multi-turn chat on one slot: each turn renders the whole
// conversation with the chat template, and the slot prefills only what its
// cache lacks (Slot.Cached: the new turn, and the last answer where the
// decode computed a selection), answering as a fresh slot would.
type Conversation struct {
	slot   *Slot
	tmpl   *chat.Template
	system string
	msgs   []chat.Message
}

// NewConversation starts a conversation (system may be empty: none).
func NewConversation(slot *Slot, tmpl *chat.Template, system string) *Conversation {
	c := &Conversation{slot: slot, tmpl: tmpl, system: system}
	c.Reset()
	return c
}

// Reset starts over: only the system message is kept, the cache is dropped.
func (c *Conversation) Reset() {
	c.msgs = c.msgs[:0]
	if c.system != "" {
		c.msgs = append(c.msgs, chat.Message{Role: "system", Content: c.system})
	}
	c.slot.Reset()
}

// Messages returns the conversation so far.
func (c *Conversation) Messages() []chat.Message { return c.msgs }

// Send adds a user turn and generates the answer (gen's prompt is set here).
// A turn that does not fit the context is refused and leaves the
// conversation as it was.
func (c *Conversation) Send(ctx context.Context, user string, gen Request) (*Result, error) {
	msgs := append(c.msgs[:len(c.msgs):len(c.msgs)], chat.Message{Role: "user", Content: user})
	text, err := c.tmpl.Render(msgs, true)
	if err != nil {
		return nil, err
	}
	ids := chat.Encode(c.slot.e.Tok, text)
	if n := c.slot.e.Ctx(); len(ids) >= n {
		return nil, fmt.Errorf("the conversation is %d tokens, the context %d: /reset to start over (or a larger --ctx-size)", len(ids), n)
	}
	gen.Prompt = ids
	if room := c.slot.e.Ctx() - len(ids); gen.MaxTokens < 0 || gen.MaxTokens > room {
		gen.MaxTokens = room
	}
	res, err := c.slot.Generate(ctx, gen)
	if err != nil {
		return nil, err
	}
	c.msgs = append(msgs, chat.Message{Role: "assistant", Content: res.Text})
	return res, nil
}
