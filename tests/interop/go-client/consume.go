package main

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// tracker counts the distinct (origin, seq) received against what is expected.
type tracker struct {
	mu       sync.Mutex
	want     map[string]map[int]bool
	seen     map[string]map[int]bool
	complete chan struct{}
	once     sync.Once
}

// newTracker: `expect` items are PREFIX:COUNT (messages 0..COUNT-1); `file`, when set, is JSON
// {"prefix": [indexes...]} (e.g. every message a producer had acknowledged).
func newTracker(expect []string, file string) *tracker {
	t := &tracker{want: map[string]map[int]bool{}, seen: map[string]map[int]bool{}, complete: make(chan struct{})}
	for _, e := range expect {
		parts := strings.Split(e, ":")
		n, err := strconv.Atoi(parts[len(parts)-1])
		if len(parts) != 2 || err != nil {
			fail("--expect wants PREFIX:COUNT, not %q", e)
		}
		set := map[int]bool{}
		for i := 0; i < n; i++ {
			set[i] = true
		}
		t.want[parts[0]] = set
	}
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			fail("read %s: %v", file, err)
		}
		var lists map[string][]int
		if err := json.Unmarshal(data, &lists); err != nil {
			fail("parse %s: %v", file, err)
		}
		for p, list := range lists {
			set := t.want[p]
			if set == nil {
				set = map[int]bool{}
				t.want[p] = set
			}
			for _, i := range list {
				set[i] = true
			}
		}
	}
	for p := range t.want {
		t.seen[p] = map[int]bool{}
	}
	t.check()
	return t
}

func (t *tracker) check() {
	for p, set := range t.want {
		if len(t.seen[p]) < len(set) {
			return
		}
	}
	t.once.Do(func() { close(t.complete) })
}

func (t *tracker) isComplete() bool {
	select {
	case <-t.complete:
		return true
	default:
		return false
	}
}

// record emits a `recv` record of one message; `mq` is the queue it was pulled from when the client says.
func (t *tracker) record(msg *primitive.MessageExt, mq *primitive.MessageQueue, extra map[string]interface{}) {
	origin, seq := msg.GetProperty("origin"), msg.GetProperty("seq")
	rec := map[string]interface{}{
		"kind":              "recv",
		"topic":             msg.Topic,
		"body":              string(msg.Body),
		"tags":              nullable(msg.GetTags()),
		"keys":              nullable(msg.GetKeys()),
		"props":             map[string]interface{}{"seq": nullable(seq), "origin": nullable(origin)},
		"queue_id":          queueID(msg),
		"queue_offset":      msg.QueueOffset,
		"commit_log_offset": msg.CommitLogOffset,
		"msg_id":            msg.MsgId,
		"offset_msg_id":     msg.OffsetMsgId,
		"reconsume_times":   msg.ReconsumeTimes,
		"store_host":        msg.StoreHost,
		"t_ms":              nowMs(),
	}
	if mq != nil {
		rec["broker"] = mq.BrokerName
	} else if msg.Queue != nil && msg.Queue.BrokerName != "" {
		rec["broker"] = msg.Queue.BrokerName
	}
	for k, v := range extra {
		rec[k] = v
	}
	emit(rec)
	if i, err := strconv.Atoi(seq); err == nil {
		t.mu.Lock()
		if set, ok := t.want[origin]; ok && set[i] {
			t.seen[origin][i] = true
			t.check()
		}
		t.mu.Unlock()
	}
}

func queueID(msg *primitive.MessageExt) interface{} {
	if msg.Queue == nil {
		return nil
	}
	return msg.Queue.QueueId
}

func nullable(s string) interface{} {
	if s == "" {
		return nil
	}
	return s
}

type consumeFlags struct {
	topic      *string
	group      *string
	expression *string
	timeoutS   *float64
	linger     *float64
	expect     multiFlag
	expectFile *string
}

func parseConsumeFlags(name string, c *common, argv []string, more func(fsAdd func(string, bool, string) *bool)) *consumeFlags {
	fs := newFlags(name, c)
	f := &consumeFlags{
		topic:      fs.String("topic", "", "topic"),
		group:      fs.String("group", "", "consumer group"),
		expression: fs.String("expression", "*", "tag expression"),
		timeoutS:   fs.Float64("timeout", 60, "seconds to wait for every expected message"),
		linger:     fs.Float64("linger", 1, "seconds to go on receiving after the last expected one (late duplicates, strays)"),
		expectFile: fs.String("expect-file", "", `JSON {"prefix": [indexes]} of expected messages`),
	}
	fs.Var(&f.expect, "expect", "PREFIX:COUNT, repeatable")
	if more != nil {
		more(fs.Bool)
	}
	_ = fs.Parse(argv)
	if *f.topic == "" || *f.group == "" {
		fail("%s needs --topic and --group", name)
	}
	return f
}

func consumerOptions(c *common, group string) []consumer.Option {
	opts := []consumer.Option{
		consumer.WithNsResolver(c.resolver()),
		consumer.WithGroupName(group),
		consumer.WithConsumerModel(consumer.Clustering),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	}
	if cred, ok := c.credentials(); ok {
		opts = append(opts, consumer.WithCredentials(cred))
	}
	return opts
}

// finishConsumer waits until every expected message arrived or the timeout, lingers, shuts the client down
// (it commits its offsets to the broker then) and exits: 0 when complete, 2 when not.
func finishConsumer(t *tracker, f *consumeFlags, what string, shutdown func() error) {
	ok := true
	select {
	case <-t.complete:
	case <-time.After(time.Duration(*f.timeoutS * float64(time.Second))):
		ok = t.isComplete()
	}
	time.Sleep(time.Duration(*f.linger * float64(time.Second)))
	emit(map[string]interface{}{"kind": "done", "complete": ok})
	shutdownWithin(what, 15*time.Second, shutdown)
	emit(map[string]interface{}{"kind": "shutdown"})
	if !ok {
		os.Exit(2)
	}
	os.Exit(0)
}

func push(c *common, argv []string) {
	var orderly *bool
	f := parseConsumeFlags("push", c, argv, func(add func(string, bool, string) *bool) {
		orderly = add("orderly", false, "orderly consumption (queue locks on the broker)")
	})
	t := newTracker(f.expect, *f.expectFile)
	opts := append(consumerOptions(c, *f.group), consumer.WithConsumerOrder(*orderly))
	if *orderly {
		opts = append(opts, consumer.WithConsumeMessageBatchMaxSize(1))
	}
	pc, err := rocketmq.NewPushConsumer(opts...)
	if err != nil {
		fail("new push consumer: %v", err)
	}
	err = pc.Subscribe(*f.topic, consumer.MessageSelector{Type: consumer.TAG, Expression: *f.expression},
		func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			var mq *primitive.MessageQueue
			if cc, ok := primitive.GetConcurrentlyCtx(ctx); ok {
				q := cc.MQ
				mq = &q
			} else if oc, ok := primitive.GetOrderlyCtx(ctx); ok {
				q := oc.MQ
				mq = &q
			}
			for _, m := range msgs {
				t.record(m, mq, nil)
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		fail("subscribe: %v", err)
	}
	if err := pc.Start(); err != nil {
		fail("push consumer start: %v", err)
	}
	emit(map[string]interface{}{"kind": "started", "t_ms": nowMs()})
	finishConsumer(t, f, "push consumer", pc.Shutdown)
}

func pull(c *common, argv []string) {
	f := parseConsumeFlags("pull", c, argv, nil)
	t := newTracker(f.expect, *f.expectFile)
	pc, err := rocketmq.NewPullConsumer(consumerOptions(c, *f.group)...)
	if err != nil {
		fail("new pull consumer: %v", err)
	}
	if err := pc.Subscribe(*f.topic, consumer.MessageSelector{Type: consumer.TAG, Expression: *f.expression}); err != nil {
		fail("subscribe: %v", err)
	}
	if err := pc.Start(); err != nil {
		fail("pull consumer start: %v", err)
	}
	emit(map[string]interface{}{"kind": "started", "t_ms": nowMs()})
	// Poll and ACK (the client commits the ACKed offsets to the broker periodically and at shutdown) until
	// finishConsumer has seen the end of the linger.
	stop := make(chan struct{})
	var polling sync.WaitGroup
	polling.Add(1)
	go func() {
		defer polling.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			cr, err := pc.Poll(context.Background(), time.Second)
			if consumer.IsNoNewMsgError(err) {
				continue
			}
			if err != nil {
				emit(map[string]interface{}{"kind": "poll_error", "error": err.Error(), "t_ms": nowMs()})
				time.Sleep(500 * time.Millisecond)
				continue
			}
			for _, m := range cr.GetMsgList() {
				t.record(m, cr.GetMQ(), nil)
			}
			pc.ACK(context.Background(), cr, consumer.ConsumeSuccess)
		}
	}()
	finishConsumer(t, f, "pull consumer", func() error {
		close(stop)
		polling.Wait()
		return pc.Shutdown()
	})
}
