package apiserver

// newServer returns New(opts), which fails only on a bad TLSCert.
func newServer(opts Options) *Server {
	a, err := New(opts)
	if err != nil {
		panic(err)
	}
	return a
}
