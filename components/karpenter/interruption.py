"""Karpenter's interruption queue: the SQS queue, its policy and the EventBridge rules that feed it.

As Karpenter 1.14.1's reference (aws/karpenter-provider-aws 1d927085 cloudformation.yaml:
KarpenterInterruptionQueue, KarpenterInterruptionQueuePolicy and the five rules). Karpenter reads
the queue named by the chart's ``settings.interruptionQueue`` and cordons and drains a node before
a spot interruption, a scheduled AWS Health event, a rebalance recommendation, a capacity
reservation interruption or an instance stopping, instead of losing its pods with it.
"""

from __future__ import annotations

import json

#: Seconds a message is kept: cloudformation.yaml MessageRetentionPeriod (an interruption warning
#: is useless after the two minutes it gives).
MESSAGE_RETENTION_SECONDS = 300

#: Rule name suffix -> the EventBridge event pattern (cloudformation.yaml, the rules' EventPattern).
EVENT_RULES: dict[str, dict[str, list[str]]] = {
    "scheduled-change": {"source": ["aws.health"], "detail-type": ["AWS Health Event"]},
    "spot-interruption": {"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]},
    "rebalance": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance Rebalance Recommendation"]},
    "instance-state-change": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance State-change Notification"]},
    "capacity-reservation-interruption": {
        "source": ["aws.ec2"],
        "detail-type": ["EC2 Capacity Reservation Instance Interruption Warning"],
    },
}


def queue_policy(queue_arn: str) -> str:
    """EventBridge (and SQS) may send to the queue; nothing may use it without TLS."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Id": "EC2InterruptionPolicy",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
                    "Action": "sqs:SendMessage",
                    "Resource": queue_arn,
                },
                {
                    "Sid": "DenyHTTP",
                    "Effect": "Deny",
                    "Action": "sqs:*",
                    "Resource": queue_arn,
                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                    "Principal": "*",
                },
            ],
        }
    )


def event_pattern(rule: str) -> str:
    """The EventBridge pattern (JSON) of ``rule`` (a key of ``EVENT_RULES``)."""
    return json.dumps(EVENT_RULES[rule])
