// A producer and a push consumer for the chaos harness (tests/chaos/go_clients.py) on the Go client
// (github.com/apache/rocketmq-client-go/v2, version pinned in go.mod / go.sum as tests/interop/go-client
// pins it), talking remoting to the name servers and brokers. Prints one JSON object per operation, in the
// history format of tests/chaos/run.py; the runner stamps each line with its own clock as it reads it.
//
//	chaos-go produce NAMESRVS TOPIC KEY_PREFIX STOP_FILE
//	chaos-go consume NAMESRVS TOPIC GROUP STOP_FILE
//
// NAMESRVS is `;`-joined. produce: SendSync of one message at a time, key KEY_PREFIX-n, the client's own
// routing and retries (2) and a 2 s timeout; `invoke` before the send; `ok` (SEND_OK) with the result's
// broker name, queue id, queue offset and message id; `fail` for another status or a broker's error
// answer (primitive.MQBrokerErr: it may still hold the message); `unknown` for any other error (a
// timeout: stored or not). consume: a push consumer of GROUP (clustering, from the first offset,
// subscribed to the whole topic), a `consume` line per message with its key, broker, queue id, queue
// offset and store host; every callback answers ConsumeSuccess. The client polls routes every 30 s (a
// constant in this version). Stops when STOP_FILE exists or standard input closes (the runner is gone).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

var outMu sync.Mutex

func emit(rec map[string]interface{}) {
	data, err := json.Marshal(rec)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cannot encode %v: %v\n", rec, err)
		return
	}
	outMu.Lock()
	defer outMu.Unlock()
	os.Stdout.Write(append(data, '\n'))
}

// stopped is closed once STOP_FILE exists or standard input closes.
func watch(stopFile string) chan struct{} {
	stopped := make(chan struct{})
	var once sync.Once
	done := func() { once.Do(func() { close(stopped) }) }
	go func() {
		buf := make([]byte, 64)
		for {
			if _, err := os.Stdin.Read(buf); err != nil {
				done()
				return
			}
		}
	}()
	go func() {
		for {
			if _, err := os.Stat(stopFile); err == nil {
				done()
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return stopped
}

func isStopped(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func fatal(format string, args ...interface{}) {
	emit(map[string]interface{}{"type": "error", "error": fmt.Sprintf(format, args...)})
	os.Exit(1)
}

func resolver(namesrvs string) primitive.NsResolver {
	return primitive.NewPassthroughResolver(strings.Split(namesrvs, ";"))
}

func produce(namesrvs, topic, prefix string, stopped chan struct{}) {
	p, err := rocketmq.NewProducer(producer.WithNsResolver(resolver(namesrvs)),
		producer.WithGroupName("chaos-go-producer"), producer.WithSendMsgTimeout(2*time.Second),
		producer.WithRetry(2))
	if err != nil {
		fatal("new producer: %v", err)
	}
	if err := p.Start(); err != nil {
		fatal("producer start: %v", err)
	}
	emit(map[string]interface{}{"type": "started"})
	n := 0
	for !isStopped(stopped) {
		key := prefix + "-" + strconv.Itoa(n)
		n++
		msg := primitive.NewMessage(topic, []byte("chaos "+key))
		msg.WithKeys([]string{key})
		emit(map[string]interface{}{"type": "invoke", "key": key})
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
		res, err := p.SendSync(ctx, msg)
		cancel()
		var brokerErr primitive.MQBrokerErr
		switch {
		case err == nil && res.Status == primitive.SendOK:
			rec := map[string]interface{}{"type": "ok", "key": key, "offset": res.QueueOffset, "msgId": res.MsgID}
			if res.MessageQueue != nil {
				rec["broker"] = res.MessageQueue.BrokerName
				rec["queue"] = res.MessageQueue.QueueId
				rec["addr"] = res.MessageQueue.BrokerName
			}
			emit(rec)
		case err == nil:
			emit(map[string]interface{}{"type": "fail", "key": key, "error": fmt.Sprintf("status %d", res.Status)})
			time.Sleep(50 * time.Millisecond)
		case errors.As(err, &brokerErr):
			emit(map[string]interface{}{"type": "fail", "key": key, "code": brokerErr.ResponseCode,
				"error": brokerErr.ErrorMessage})
			time.Sleep(50 * time.Millisecond)
		default:
			emit(map[string]interface{}{"type": "unknown", "key": key, "error": err.Error()})
			time.Sleep(50 * time.Millisecond)
		}
	}
	shutdown(p.Shutdown)
	emit(map[string]interface{}{"type": "done", "next": n})
}

func consume(namesrvs, topic, group string, stopped chan struct{}) {
	c, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(resolver(namesrvs)), consumer.WithGroupName(group),
		consumer.WithConsumerModel(consumer.Clustering), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		fatal("new push consumer: %v", err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{}, func(ctx context.Context,
		msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			rec := map[string]interface{}{"type": "consume", "key": m.GetKeys(), "offset": m.QueueOffset,
				"addr": m.StoreHost, "msgId": m.MsgId, "reconsume": m.ReconsumeTimes}
			if m.Queue != nil {
				rec["broker"] = m.Queue.BrokerName
				rec["queue"] = m.Queue.QueueId
			}
			emit(rec)
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		fatal("subscribe: %v", err)
	}
	if err := c.Start(); err != nil {
		fatal("push consumer start: %v", err)
	}
	emit(map[string]interface{}{"type": "started"})
	<-stopped
	shutdown(c.Shutdown)
	emit(map[string]interface{}{"type": "done"})
}

// shutdown runs a client's Shutdown, giving up after 5 s (the process exits right after anyway).
func shutdown(f func() error) {
	done := make(chan struct{})
	go func() {
		_ = f()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
}

func main() {
	rlog.SetLogLevel("warn")
	if len(os.Args) != 6 {
		fatal("usage: chaos-go produce|consume NAMESRVS TOPIC KEY_PREFIX|GROUP STOP_FILE")
	}
	stopped := watch(os.Args[5])
	switch os.Args[1] {
	case "produce":
		produce(os.Args[2], os.Args[3], os.Args[4], stopped)
	case "consume":
		consume(os.Args[2], os.Args[3], os.Args[4], stopped)
	default:
		fatal("unknown command %q", os.Args[1])
	}
}
