"""Post-training trainers for the tiny language model: supervised fine-tuning (``sft``), RLHF
with PPO (``rlhf``), DPO/IPO on preference pairs (``preference``), GRPO with a verifier
(``grpo``), and the toy tasks they are taught on (``tasks``)."""
