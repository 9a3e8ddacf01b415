package guirpc

import "context"

// The Add Project wizard's ops: project web RPCs the client makes on the
// user's behalf, started by one op and collected by its _poll op.

func opGetProjectConfig(_ context.Context, _ *Server, _ *request, w *xw) func(context.Context) {
	w.line("<error>get_project_config: in progress</error>")
	return nil
}

func opGetProjectConfigPoll(_ context.Context, _ *Server, _ *request, w *xw) func(context.Context) {
	w.line("<error>get_project_config_poll: in progress</error>")
	return nil
}

func opLookupAccount(_ context.Context, _ *Server, _ *request, w *xw) func(context.Context) {
	w.line("<error>lookup_account: in progress</error>")
	return nil
}

func opLookupAccountPoll(_ context.Context, _ *Server, _ *request, w *xw) func(context.Context) {
	w.line("<error>lookup_account_poll: in progress</error>")
	return nil
}

func opCreateAccount(_ context.Context, _ *Server, _ *request, w *xw) func(context.Context) {
	w.line("<error>create_account: in progress</error>")
	return nil
}

func opCreateAccountPoll(_ context.Context, _ *Server, _ *request, w *xw) func(context.Context) {
	w.line("<error>create_account_poll: in progress</error>")
	return nil
}
