package harn

// Hand-written constructors of common results whose schema is a union of
// the shapes Harn accepts; the rest of the package is generated.

// ToolsListResult is host/tools/list's canonical result, {"tools": [...]},
// with tools in the order given (an empty list when there are none).
func ToolsListResult(tools ...HostTool) *HostToolsListResult {
	if tools == nil {
		tools = []HostTool{}
	}
	return &HostToolsListResult{Object: &HostToolsListResultObject{ToolsList: &ToolsList{Tools: tools}}}
}
