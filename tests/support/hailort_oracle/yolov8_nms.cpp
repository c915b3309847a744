// HailoRT's YOLOv8 NMS post-process op (hailort: libhailort/src/net_flow/ops/yolov8_post_process.cpp), the one
// a HEF compiled with nms_postprocess(meta_arch=yolov8) runs on the host, driven from the oracle tests
// (tests/backends/test_hailort_oracle.py). Its symbols are hidden in libhailort.so: this is built against the
// internal headers and linked with libhailort's own objects. One frame per request on stdin:
//
//   request: "CLASSES MAX_PER_CLASS SCORE_TH IOU_TH IMAGE_H IMAGE_W TYPE NSTRIDES\n", then per stride
//            "STRIDE\n" and, for its box head then its class head,
//            "H W C PH PW PC ZP SCALE MIN MAX NBYTES\n" + NBYTES bytes (the device frame, NHCW)
//   answer:  "STATUS NBYTES\n" + the HAILO_NMS_BY_CLASS float32 buffer (STATUS: hailo_status, 0 = success)
#include "net_flow/ops/yolov8_post_process.hpp"
#include "driver_io.hpp"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

using namespace hailort;
using namespace hailort::net_flow;

int main()
{
    std::ios::sync_with_stdio(false);
    uint32_t classes, max_per_class, type, nstrides;
    double score_th, iou_th;
    float image_h, image_w;
    while (std::cin >> classes >> max_per_class >> score_th >> iou_th >> image_h >> image_w >> type >> nstrides) {
        std::unordered_map<std::string, BufferMetaData> inputs_metadata;
        std::vector<std::vector<uint8_t>> frames(2 * nstrides);
        Yolov8PostProcessConfig yolov8_config{};
        yolov8_config.image_height = image_h;
        yolov8_config.image_width = image_w;
        for (uint32_t i = 0; i < nstrides; i++) {
            uint32_t stride;
            std::cin >> stride;
            const auto reg = "reg" + std::to_string(i), cls = "cls" + std::to_string(i);
            inputs_metadata[reg] = read_head(static_cast<hailo_format_type_t>(type), frames[2 * i]);
            inputs_metadata[cls] = read_head(static_cast<hailo_format_type_t>(type), frames[2 * i + 1]);
            yolov8_config.reg_to_cls_inputs.push_back(Yolov8MatchingLayersNames{reg, cls, stride});
        }
        BufferMetaData output{};
        output.format = hailo_format_t{HAILO_FORMAT_TYPE_FLOAT32, HAILO_FORMAT_ORDER_HAILO_NMS_BY_CLASS, HAILO_FORMAT_FLAGS_NONE};
        const NmsPostProcessConfig nms_config(score_th, iou_th, max_per_class, max_per_class * classes, classes);
        std::vector<uint8_t> buffer(classes * (1 + 5 * max_per_class) * sizeof(float), 0);
        auto metadata = Yolov8OpMetadata::create(inputs_metadata, {{"nms", output}}, nms_config, yolov8_config, "net");
        hailo_status status = metadata.status();
        if (HAILO_SUCCESS == status) {
            auto op = YOLOV8PostProcessOp::create(std::static_pointer_cast<Yolov8OpMetadata>(metadata.value()));
            status = op.status();
            if (HAILO_SUCCESS == status) {
                std::map<std::string, MemoryView> inputs, outputs{{"nms", MemoryView(buffer.data(), buffer.size())}};
                for (uint32_t i = 0; i < nstrides; i++) {
                    inputs["reg" + std::to_string(i)] = MemoryView(frames[2 * i].data(), frames[2 * i].size());
                    inputs["cls" + std::to_string(i)] = MemoryView(frames[2 * i + 1].data(), frames[2 * i + 1].size());
                }
                status = op.value()->execute(inputs, outputs);
            }
        }
        write_answer(status, buffer);
    }
    return 0;
}
