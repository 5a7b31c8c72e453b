// Command schema-chatbot serves the order-status chat-bot schema with its
// application actions registered from Go: a small program embedding
// Veena, as a real chat-bot would. It listens on 127.0.0.1:8081 (open, no
// access tokens) and keeps its data in ./chatbot.db.
//
//	go run ./examples/schema-chatbot
//
// Then load format/schema/testdata/valid/order-status-bot.yaml and send it
// events (README, "Schemas").
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"regexp"

	veena "github.com/veena-wf/veena"
	"github.com/veena-wf/veena/kernel"
	"github.com/veena-wf/veena/schema"
	"github.com/veena-wf/veena/server"
	"github.com/veena-wf/veena/store/sqlitestore"
)

var orderNo = regexp.MustCompile(`[A-Z]-\d{4}`)

func main() {
	ctx := context.Background()
	rt := schema.New()
	// What the bot says goes to standard output here; a real one would
	// call its chat service (with c.Key as the idempotency key, since an
	// action may run again if the engine dies before its result is stored).
	rt.Action("chat.send", func(ctx context.Context, c *schema.Call) (any, error) {
		fmt.Printf("bot to %s: %v\n", c.Context["userId"], c.Arg("text"))
		return nil, nil
	})
	rt.Action("orders.parseNumber", func(ctx context.Context, c *schema.Call) (any, error) {
		text, _ := c.Arg("text").(string)
		return orderNo.FindString(text), nil
	})
	rt.Action("orders.fetchStatus", func(ctx context.Context, c *schema.Call) (any, error) {
		switch c.Arg("orderNo") {
		case "":
			return nil, veena.Permanent(errors.New("no order number"))
		case "A-1234":
			return "delivered", nil
		}
		return "in transit", nil
	})

	k := kernel.New()
	rt.Register(k)
	st, err := sqlitestore.Open("chatbot.db", sqlitestore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	e, err := veena.Open(ctx, veena.Options{Store: st, Kernel: k, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	rt.Attach(e)
	if err := e.Start(ctx); err != nil { // timers, retries, actions left by a crash
		log.Fatal(err)
	}
	srv := server.New(server.Config{Engine: e, Schemas: rt, Loopback: true})
	fmt.Println("schema-chatbot serving on http://127.0.0.1:8081")
	log.Fatal(http.ListenAndServe("127.0.0.1:8081", srv))
}
