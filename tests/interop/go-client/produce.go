package main

import (
	"context"
	"flag"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// newFlags is a subcommand's flag set with the common flags (credentials) bound too.
func newFlags(name string, c *common) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	fs.StringVar(&c.accessKey, "access-key", c.accessKey, "ACL access key (primitive.Credentials)")
	fs.StringVar(&c.secretKey, "secret-key", c.secretKey, "ACL secret key")
	return fs
}

func statusName(s primitive.SendStatus) string {
	switch s {
	case primitive.SendOK:
		return "SEND_OK"
	case primitive.SendFlushDiskTimeout:
		return "FLUSH_DISK_TIMEOUT"
	case primitive.SendFlushSlaveTimeout:
		return "FLUSH_SLAVE_TIMEOUT"
	case primitive.SendSlaveNotAvailable:
		return "SLAVE_NOT_AVAILABLE"
	default:
		return "UNKNOWN_ERROR"
	}
}

// sentRecord is a `sent` record of message i. For a batch the result's msgId (offsetMsgId) field holds one id
// per message, comma-separated, as the broker answers: message j of the batch gets the j-th.
func sentRecord(i int, res *primitive.SendResult, j int, extra map[string]interface{}) map[string]interface{} {
	rec := map[string]interface{}{
		"kind":   "sent",
		"i":      i,
		"status": statusName(res.Status),
		"offset": res.QueueOffset,
		"t_ms":   nowMs(),
	}
	if ids := strings.Split(res.MsgID, ","); j < len(ids) && ids[j] != "" {
		rec["msg_id"] = ids[j]
	}
	if ids := strings.Split(res.OffsetMsgID, ","); j < len(ids) && ids[j] != "" {
		rec["offset_msg_id"] = ids[j]
	}
	if res.MessageQueue != nil {
		rec["queue_id"] = res.MessageQueue.QueueId
		rec["broker"] = res.MessageQueue.BrokerName
	}
	if res.TransactionID != "" {
		rec["transaction_id"] = res.TransactionID
	}
	for k, v := range extra {
		rec[k] = v
	}
	return rec
}

func producerOptions(c *common, group string, timeout time.Duration, retries int) []producer.Option {
	opts := []producer.Option{
		producer.WithNsResolver(c.resolver()),
		producer.WithGroupName(group),
		producer.WithSendMsgTimeout(timeout),
		producer.WithRetry(retries),
	}
	if cred, ok := c.credentials(); ok {
		opts = append(opts, producer.WithCredentials(cred))
	}
	return opts
}

func produce(c *common, argv []string) {
	fs := newFlags("produce", c)
	topic := fs.String("topic", "", "topic")
	prefix := fs.String("prefix", "", "message prefix (messages.py)")
	count := fs.Int("count", 0, "messages to send")
	start := fs.Int("start", 0, "index of the first message")
	mode := fs.String("mode", "sync", "sync | async | batch | oneway | ordered")
	batchSize := fs.Int("batch-size", 10, "messages per batch (batch mode)")
	group := fs.String("group", "", "producer group (default go-producer-<prefix>)")
	timeoutMs := fs.Int("send-timeout-ms", 3000, "send timeout")
	retries := fs.Int("retries", 2, "the client's retries of a failed send")
	inFlight := fs.Int("in-flight", 16, "async: sends outstanding at once")
	keepGoing := fs.Bool("keep-going", false, "log send errors and continue")
	maxErrors := fs.Int("max-errors", 1000000, "with --keep-going: give up after this many errors")
	paceMs := fs.Int("pace-ms", 0, "pause after each send")
	stopFile := fs.String("stop-file", "", "stop sending once this file exists")
	lingerMs := fs.Int("linger-ms", -1, "pause between the last send and the producer's shutdown "+
		"(default: 500 ms for oneway, else none)")
	_ = fs.Parse(argv)
	if *topic == "" || *prefix == "" {
		fail("produce needs --topic and --prefix")
	}
	if *group == "" {
		*group = "go-producer-" + *prefix
	}
	opts := producerOptions(c, *group, time.Duration(*timeoutMs)*time.Millisecond, *retries)
	if *mode == "ordered" {
		// The client's own selector for ordered sends: the queue is the FNV hash of the message's sharding key
		// modulo the queue count, so every message of a key goes to one queue.
		opts = append(opts, producer.WithQueueSelector(producer.NewHashQueueSelector()))
	}
	p, err := rocketmq.NewProducer(opts...)
	if err != nil {
		fail("new producer: %v", err)
	}
	if err := p.Start(); err != nil {
		fail("producer start: %v", err)
	}
	timeout := time.Duration(*timeoutMs) * time.Millisecond
	errs := 0
	onError := func(i int, err error) {
		errs++
		emit(map[string]interface{}{"kind": "send_error", "i": i, "error": err.Error(), "t_ms": nowMs()})
		if !*keepGoing || errs > *maxErrors {
			emit(map[string]interface{}{"kind": "done", "errors": errs})
			os.Exit(1)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopped := func() bool {
		if *stopFile == "" {
			return false
		}
		_, err := os.Stat(*stopFile)
		return err == nil
	}
	end := *start + *count
	switch *mode {
	case "sync", "ordered", "oneway":
		for i := *start; i < end && !stopped(); i++ {
			msg := buildMessage(*topic, *prefix, i)
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			switch *mode {
			case "oneway":
				if err := p.SendOneWay(ctx, msg); err != nil {
					onError(i, err)
				} else {
					emit(map[string]interface{}{"kind": "sent", "i": i, "status": "ONEWAY", "t_ms": nowMs()})
				}
			default:
				extra := map[string]interface{}{}
				if *mode == "ordered" {
					key := shardingKey(i)
					msg.WithShardingKey(strconv.Itoa(key))
					extra["sharding_key"] = key
				}
				res, err := p.SendSync(ctx, msg)
				if err != nil {
					onError(i, err)
				} else {
					emit(sentRecord(i, res, 0, extra))
				}
			}
			cancel()
			if *paceMs > 0 {
				time.Sleep(time.Duration(*paceMs) * time.Millisecond)
			}
		}
	case "batch":
		for first := *start; first < end && !stopped(); first += *batchSize {
			last := first + *batchSize
			if last > end {
				last = end
			}
			msgs := make([]*primitive.Message, 0, last-first)
			for i := first; i < last; i++ {
				msgs = append(msgs, buildMessage(*topic, *prefix, i))
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			// SendSync with several messages is the client's batch send (SEND_BATCH_MESSAGE).
			res, err := p.SendSync(ctx, msgs...)
			cancel()
			if err != nil {
				for i := first; i < last; i++ {
					onError(i, err)
				}
				continue
			}
			for i := first; i < last; i++ {
				emit(sentRecord(i, res, i-first, map[string]interface{}{"batch_first": first}))
			}
			if *paceMs > 0 {
				time.Sleep(time.Duration(*paceMs) * time.Millisecond)
			}
		}
	case "async":
		var wg sync.WaitGroup
		var mu sync.Mutex
		slots := make(chan struct{}, *inFlight)
		answered := map[int]bool{}
		for i := *start; i < end && !stopped(); i++ {
			slots <- struct{}{}
			wg.Add(1)
			i := i
			err := p.SendAsync(context.Background(), func(_ context.Context, res *primitive.SendResult, err error) {
				mu.Lock()
				first := !answered[i]
				answered[i] = true
				mu.Unlock()
				if !first {
					return // the client may call back twice for one send; count the first answer
				}
				if err != nil || res == nil {
					mu.Lock()
					errs++
					mu.Unlock()
					emit(map[string]interface{}{"kind": "send_error", "i": i, "error": errString(err), "t_ms": nowMs()})
				} else {
					emit(sentRecord(i, res, 0, nil))
				}
				<-slots
				wg.Done()
			}, buildMessage(*topic, *prefix, i))
			if err != nil {
				<-slots
				wg.Done()
				mu.Lock()
				onError(i, err)
				mu.Unlock()
			}
		}
		waited := make(chan struct{})
		go func() { wg.Wait(); close(waited) }()
		select {
		case <-waited:
		case <-time.After(timeout + 30*time.Second):
			emit(map[string]interface{}{"kind": "error", "error": "async sends still unanswered after the wait"})
			mu.Lock()
			errs++
			mu.Unlock()
		}
		mu.Lock()
		defer mu.Unlock() // late callbacks wait: the counts below are final
	default:
		fail("unknown mode %s", *mode)
	}
	emit(map[string]interface{}{"kind": "done", "errors": errs})
	// v2.1.2 does not flag its oneway requests oneway, so the broker answers them (Apache's does too), and
	// Shutdown closes the connection at once: with answers unread there, the kernel resets the connection
	// and drops whatever of the last sends it had not transmitted yet. A pause lets them leave and the
	// client read the answers first.
	if *lingerMs < 0 && *mode == "oneway" {
		*lingerMs = 500
	}
	if *lingerMs > 0 {
		time.Sleep(time.Duration(*lingerMs) * time.Millisecond)
	}
	shutdownWithin("producer", 5*time.Second, p.Shutdown)
	if errs > 0 && !*keepGoing {
		os.Exit(1)
	}
	os.Exit(0)
}

func errString(err error) string {
	if err == nil {
		return "no send result"
	}
	return err.Error()
}
