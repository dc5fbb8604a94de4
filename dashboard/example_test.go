package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	chokaq "github.com/chokaq/chokaq-go"
	"github.com/chokaq/chokaq-go/dashboard"
	"github.com/chokaq/chokaq-go/jobs/memstore"
)

// Mounting the dashboard in a service's own mux, under /jobs. It is given
// the Client's operator role only (client.Admin()): it can look jobs up,
// resurrect, purge and pause, never claim or settle. Without Auth it
// answers loopback clients only; set Auth (or put the service's own
// authentication in front) before exposing it.
func Example() {
	ctx := context.Background()
	client, err := chokaq.New(ctx, chokaq.Config{Store: memstore.New(), DisableProcessor: true, DisableRescue: true}, nil)
	if err != nil {
		panic(err)
	}
	dash, err := dashboard.New(client.Admin(), dashboard.Options{BasePath: "/jobs"})
	if err != nil {
		panic(err)
	}
	defer dash.Close()

	mux := http.NewServeMux()
	mux.Handle("/jobs/", dash)

	srv := httptest.NewServer(mux) // listens on 127.0.0.1
	defer srv.Close()
	res, err := http.Get(srv.URL + "/jobs/")
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	fmt.Println(res.StatusCode, strings.HasPrefix(res.Header.Get("Content-Type"), "text/html"))
	// Output: 200 true
}
