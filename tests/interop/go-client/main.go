// Command interop-go-client drives the official Go client, github.com/apache/rocketmq-client-go/v2 (remoting
// protocol), for the interop runner (tests/interop/run.py, cases in cases_go.py): one action per process.
//
// It prints one JSON object per line on stdout: `sent` / `send_error` records from producers, `local` / `check`
// records from the transaction listener, `recv` records from consumers, then `done`. The runner compares them
// with what was sent (messages.py; message i of a prefix is built here exactly as there). The client's own log
// goes to stderr (level from ROCKETMQ_GO_LOG_LEVEL, default warn).
//
//	interop-go-client --namesrv ADDR produce --topic T --prefix P --count N --mode sync|async|batch|oneway|ordered
//	interop-go-client --namesrv ADDR transaction --topic T --group G --prefix P --count N [--plan commit,rollback,unknown]
//	interop-go-client --namesrv ADDR push --topic T --group G --expect P:N [--expect-file F] [--orderly]
//	interop-go-client --namesrv ADDR pull --topic T --group G --expect P:N [--expect-file F]
//
// Every action takes --access-key / --secret-key (primitive.Credentials on the producer or consumer).
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// ---- output ----------------------------------------------------------------------------------------------

var outMu sync.Mutex

// emit writes one JSON record as a line on stdout (whole lines only, whatever goroutine calls).
func emit(rec map[string]interface{}) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rec); err != nil {
		fmt.Fprintf(os.Stderr, "cannot encode record %v: %v\n", rec, err)
		return
	}
	outMu.Lock()
	defer outMu.Unlock()
	_, _ = os.Stdout.WriteString(b.String())
}

func nowMs() int64 { return time.Now().UnixNano() / int64(time.Millisecond) }

// ---- the messages (tests/interop/messages.py) ----------------------------------------------------------------

// bigPad: runs whose prefix starts with "big" carry this much padding.
const bigPad = 100 * 1024

func body(prefix string, i int) string {
	text := fmt.Sprintf("%s-body-%d-%s%s", prefix, i, strings.Repeat("\u00e9", i%5), strings.Repeat("x", i%23))
	if strings.HasPrefix(prefix, "big") {
		text += strings.Repeat("y", bigPad+i)
	}
	return text
}

func tags(i int) string { return fmt.Sprintf("Tag%d", i%3) }

func keys(prefix string, i int) string { return fmt.Sprintf("%s-key-%d", prefix, i) }

// shardingKey is the ordering key of message i for ordered sends.
func shardingKey(i int) int { return i % 3 }

func buildMessage(topic, prefix string, i int) *primitive.Message {
	msg := primitive.NewMessage(topic, []byte(body(prefix, i)))
	msg.WithTag(tags(i))
	msg.WithKeys([]string{keys(prefix, i)})
	msg.WithProperty("seq", strconv.Itoa(i))
	msg.WithProperty("origin", prefix)
	return msg
}

// ---- common flags ----------------------------------------------------------------------------------------------

type common struct {
	namesrv   string
	accessKey string
	secretKey string
}

func (c *common) credentials() (primitive.Credentials, bool) {
	if c.accessKey == "" && c.secretKey == "" {
		return primitive.Credentials{}, false
	}
	return primitive.Credentials{AccessKey: c.accessKey, SecretKey: c.secretKey}, true
}

func (c *common) resolver() primitive.NsResolver {
	return primitive.NewPassthroughResolver(strings.Split(c.namesrv, ";"))
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func fail(format string, args ...interface{}) {
	msg := fmt.Sprintf(format, args...)
	emit(map[string]interface{}{"kind": "error", "error": msg})
	emit(map[string]interface{}{"kind": "done", "errors": 1})
	fmt.Fprintln(os.Stderr, msg)
	os.Exit(1)
}

// shutdownWithin runs a client's Shutdown, giving up after `d` (the process exits right after anyway).
func shutdownWithin(what string, d time.Duration, shutdown func() error) {
	done := make(chan error, 1)
	go func() { done <- shutdown() }()
	select {
	case err := <-done:
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s shutdown: %v\n", what, err)
		}
	case <-time.After(d):
		fmt.Fprintf(os.Stderr, "%s shutdown did not finish within %s\n", what, d)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: interop-go-client --namesrv ADDR produce|transaction|push|pull [flags] (-h for each)")
	os.Exit(2)
}

func main() {
	if lvl := os.Getenv("ROCKETMQ_GO_LOG_LEVEL"); lvl != "" {
		rlog.SetLogLevel(lvl)
	} else {
		rlog.SetLogLevel("warn")
	}
	args := os.Args[1:]
	var c common
	// --namesrv ADDR comes first (the harness puts it there); then the action and its flags.
	for len(args) >= 2 && strings.HasPrefix(args[0], "--") {
		switch args[0] {
		case "--namesrv":
			c.namesrv = args[1]
		case "--access-key":
			c.accessKey = args[1]
		case "--secret-key":
			c.secretKey = args[1]
		default:
			usage()
		}
		args = args[2:]
	}
	if len(args) == 0 || c.namesrv == "" {
		usage()
	}
	action, rest := args[0], args[1:]
	switch action {
	case "produce":
		produce(&c, rest)
	case "transaction":
		transaction(&c, rest)
	case "push":
		push(&c, rest)
	case "pull":
		pull(&c, rest)
	default:
		usage()
	}
}
