package acp

// Hand-written constructors of the values agents and clients build most
// (the schema cannot say them); the rest of the package is generated.

// TextBlock is a text content block.
func TextBlock(text string) ContentBlock {
	return ContentBlock{Text: &TextContent{Text: text}}
}

// AgentText is the session/update notification that streams one chunk of
// the agent's answer (agent_message_chunk) in session.
func AgentText(session SessionID, text string) *SessionNotification {
	return &SessionNotification{SessionID: session, Update: SessionUpdate{
		AgentMessageChunk: &ContentChunk{Content: TextBlock(text)},
	}}
}

// PromptText is the text of a prompt's text blocks, joined; other blocks
// are skipped.
func PromptText(blocks []ContentBlock) string {
	var s string
	for _, b := range blocks {
		if b.Text != nil {
			s += b.Text.Text
		}
	}
	return s
}
