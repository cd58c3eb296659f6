package main

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

func stateName(s primitive.LocalTransactionState) string {
	switch s {
	case primitive.CommitMessageState:
		return "COMMIT"
	case primitive.RollbackMessageState:
		return "ROLLBACK"
	default:
		return "UNKNOWN"
	}
}

func parseState(s string) primitive.LocalTransactionState {
	switch strings.ToLower(s) {
	case "commit":
		return primitive.CommitMessageState
	case "rollback":
		return primitive.RollbackMessageState
	case "unknown":
		return primitive.UnknowState
	}
	fail("unknown transaction state %q (commit, rollback or unknown)", s)
	return primitive.UnknowState
}

// txListener answers the local transaction of message i with plan[i % len(plan)], and a check-back of a message
// whose local answer was UNKNOWN with checkAnswer (of any other message with its local answer again: the broker
// should never ask about those). Counts check-backs per message.
type txListener struct {
	plan        []primitive.LocalTransactionState
	checkAnswer primitive.LocalTransactionState
	mu          sync.Mutex
	checks      map[int]int
}

func seqOf(m interface{ GetProperty(string) string }) (int, bool) {
	i, err := strconv.Atoi(m.GetProperty("seq"))
	return i, err == nil
}

func (l *txListener) planned(i int) primitive.LocalTransactionState { return l.plan[i%len(l.plan)] }

func (l *txListener) ExecuteLocalTransaction(msg *primitive.Message) primitive.LocalTransactionState {
	i, ok := seqOf(msg)
	state := primitive.UnknowState
	if ok {
		state = l.planned(i)
	}
	emit(map[string]interface{}{"kind": "local", "seq": msg.GetProperty("seq"), "answer": stateName(state),
		"transaction_id": msg.TransactionId})
	return state
}

func (l *txListener) CheckLocalTransaction(msg *primitive.MessageExt) primitive.LocalTransactionState {
	i, ok := seqOf(msg)
	state := primitive.UnknowState
	if ok {
		state = l.planned(i)
		if state == primitive.UnknowState {
			state = l.checkAnswer
		}
		l.mu.Lock()
		l.checks[i]++
		l.mu.Unlock()
	}
	emit(map[string]interface{}{
		"kind":           "check",
		"seq":            msg.GetProperty("seq"),
		"origin":         msg.GetProperty("origin"),
		"answer":         stateName(state),
		"transaction_id": msg.TransactionId,
		"msg_id":         msg.MsgId,
		"check_times":    msg.GetProperty(primitive.PropertyTranscationCheckTimes),
		"t_ms":           nowMs(),
	})
	return state
}

// checkedAll: every message planned UNKNOWN among 0..count-1 was checked at least once.
func (l *txListener) checkedAll(start, count int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := start; i < start+count; i++ {
		if l.planned(i) == primitive.UnknowState && l.checks[i] == 0 {
			return false
		}
	}
	return true
}

func transaction(c *common, argv []string) {
	fs := newFlags("transaction", c)
	topic := fs.String("topic", "", "topic")
	group := fs.String("group", "", "producer group")
	prefix := fs.String("prefix", "", "message prefix (messages.py)")
	count := fs.Int("count", 0, "transactional messages to send")
	start := fs.Int("start", 0, "index of the first message")
	plan := fs.String("plan", "commit,rollback,unknown", "local transaction answer of message i: item i % len")
	checkAnswer := fs.String("check-answer", "commit", "answer to a check-back of a message left unknown")
	timeoutS := fs.Float64("timeout", 60, "seconds to wait for the check-backs of the unknown ones")
	linger := fs.Float64("linger", 3, "seconds to stay up after the last awaited check-back")
	_ = fs.Parse(argv)
	if *topic == "" || *prefix == "" || *group == "" {
		fail("transaction needs --topic, --group and --prefix")
	}
	l := &txListener{checkAnswer: parseState(*checkAnswer), checks: map[int]int{}}
	for _, s := range strings.Split(*plan, ",") {
		l.plan = append(l.plan, parseState(s))
	}
	p, err := rocketmq.NewTransactionProducer(l, producerOptions(c, *group, 3*time.Second, 2)...)
	if err != nil {
		fail("new transaction producer: %v", err)
	}
	if err := p.Start(); err != nil {
		fail("transaction producer start: %v", err)
	}
	began := time.Now()
	errs := 0
	for i := *start; i < *start+*count; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		res, err := p.SendMessageInTransaction(ctx, buildMessage(*topic, *prefix, i))
		cancel()
		if err != nil {
			errs++
			emit(map[string]interface{}{"kind": "send_error", "i": i, "error": err.Error(), "t_ms": nowMs()})
			continue
		}
		emit(sentRecord(i, res.SendResult, 0, map[string]interface{}{"local_state": stateName(res.State)}))
	}
	// Stay up for the check-backs of the messages left unknown.
	deadline := began.Add(time.Duration(*timeoutS * float64(time.Second)))
	complete := false
	for time.Now().Before(deadline) {
		if l.checkedAll(*start, *count) {
			complete = true
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Late or repeated check-backs show up here, and the END_TRANSACTION (oneway) of the last answer leaves.
	time.Sleep(time.Duration(*linger * float64(time.Second)))
	l.mu.Lock()
	checks := map[string]int{}
	for i, n := range l.checks {
		checks[strconv.Itoa(i)] = n
	}
	l.mu.Unlock()
	emit(map[string]interface{}{"kind": "checks", "by_seq": checks})
	emit(map[string]interface{}{"kind": "done", "errors": errs, "complete": complete})
	shutdownWithin("transaction producer", 5*time.Second, p.Shutdown)
	if errs > 0 || !complete {
		os.Exit(1)
	}
	os.Exit(0)
}
